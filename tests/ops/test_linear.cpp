#include <catch2/catch.hpp>
#include <tinynet/tinynet.hpp>
#include <vector>

#include "ops/op_testing.hpp"
#include "thread_count_restorer.hpp"

using namespace tinynet;
using namespace tinynet::testing;

namespace {

/// C[m,n] = sum_k A[m,k] B[k,n], optionally with either operand stored transposed.
std::vector<double> matmul_reference(const std::vector<double>& a, const std::vector<double>& b, std::int64_t m,
                                     std::int64_t k, std::int64_t n, bool trans_a = false, bool trans_b = false) {
  std::vector<double> c(static_cast<std::size_t>(m * n), 0.0);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (std::int64_t p = 0; p < k; ++p)
        acc += a[static_cast<std::size_t>(trans_a ? p * m + i : i * k + p)] *
               b[static_cast<std::size_t>(trans_b ? j * k + p : p * n + j)];
      c[static_cast<std::size_t>(i * n + j)] = acc;
    }
  return c;
}

/// y[n,o] = sum_i x[n,i] W[o,i] + b[o]
std::vector<double> linear_reference(const Tensor& x, const Tensor& w, const Tensor& b) {
  const std::int64_t batch = x.size(0), in = x.size(1), out = w.size(0);
  std::vector<double> y = matmul_reference(values(x), values(w), batch, in, out, false, true);
  if (b.defined()) {
    const auto vb = values(b);
    for (std::int64_t n = 0; n < batch; ++n)
      for (std::int64_t o = 0; o < out; ++o)
        y[static_cast<std::size_t>(n * out + o)] += vb[static_cast<std::size_t>(o)];
  }
  return y;
}

struct LinearShape {
  std::int64_t batch, in, out;
};

// Batch 1, odd and non-square sizes, a single output, a single input feature.
const LinearShape kLinear[] = {{1, 3, 5}, {7, 4, 2}, {2, 9, 1}, {3, 1, 6}, {4, 5, 5}};

}  // namespace

TEST_CASE("linear: forward matches x W^T + b", "[ops][linear]") {
  for (const auto& s : kLinear) {
    INFO("batch " << s.batch << " in " << s.in << " out " << s.out);
    const Tensor x = random_input({s.batch, s.in}, 1, false);
    const Tensor w = random_input({s.out, s.in}, 2, false);
    const Tensor b = random_input({s.out}, 3, false);
    const Tensor y = linear(x, w, b);
    CHECK(y.shape() == Shape{s.batch, s.out});
    check_close(y, linear_reference(x, w, b), 1e-14);
    check_close(linear(x, w), linear_reference(x, w, Tensor()), 1e-14);
    check_close(linear(x.to(DType::float32), w.to(DType::float32), b.to(DType::float32)), linear_reference(x, w, b),
                1e-5);
  }
}

TEST_CASE("linear: gradients of input, weight and bias match finite differences", "[ops][linear][gradcheck]") {
  for (const auto& s : kLinear) {
    INFO("batch " << s.batch << " in " << s.in << " out " << s.out);
    const auto with_bias = [](std::span<const Tensor> in) { return linear(in[0], in[1], in[2]); };
    check_gradients(with_bias,
                    {random_input({s.batch, s.in}, 4), random_input({s.out, s.in}, 5), random_input({s.out}, 6)});
    check_gradients([](std::span<const Tensor> in) { return linear(in[0], in[1]); },
                    {random_input({s.batch, s.in}, 7), random_input({s.out, s.in}, 8)});
    // A frozen input or frozen weight: only the others are differentiated.
    check_gradients(with_bias, {random_input({s.batch, s.in}, 9, false), random_input({s.out, s.in}, 10),
                                random_input({s.out}, 11)});
    check_gradients(with_bias, {random_input({s.batch, s.in}, 12), random_input({s.out, s.in}, 13, false),
                                random_input({s.out}, 14, false)});
  }
}

TEST_CASE("matmul: forward and gradients", "[ops][linear][matmul][gradcheck]") {
  struct Mkn {
    std::int64_t m, k, n;
  };
  for (const auto& s : {Mkn{1, 1, 1}, Mkn{3, 5, 2}, Mkn{4, 1, 6}, Mkn{1, 7, 3}, Mkn{6, 6, 6}}) {
    INFO(s.m << "x" << s.k << " times " << s.k << "x" << s.n);
    const Tensor a = random_input({s.m, s.k}, 21, false);
    const Tensor b = random_input({s.k, s.n}, 22, false);
    const Tensor c = matmul(a, b);
    CHECK(c.shape() == Shape{s.m, s.n});
    check_close(c, matmul_reference(values(a), values(b), s.m, s.k, s.n), 1e-14);
    check_gradients([](std::span<const Tensor> in) { return matmul(in[0], in[1]); },
                    {random_input({s.m, s.k}, 23), random_input({s.k, s.n}, 24)});
  }
}

TEST_CASE("matmul: large products split over threads agree with the reference", "[ops][linear][matmul]") {
  // Above 2^21 multiply-adds the GEMM is split over rows (m >= n) or columns (m < n) when
  // more than one thread is allowed; the backward runs both transposed variants.
  ThreadCountRestorer restore;
  set_num_threads(2);
  struct Mkn {
    std::int64_t m, k, n;
  };
  for (const auto& s : {Mkn{160, 140, 130}, Mkn{17, 300, 520}}) {
    INFO(s.m << "x" << s.k << " times " << s.k << "x" << s.n);
    const Tensor a = random_input({s.m, s.k}, 31);
    const Tensor b = random_input({s.k, s.n}, 32);
    const Tensor c = matmul(a, b);
    check_close(c, matmul_reference(values(a), values(b), s.m, s.k, s.n), 1e-12);
    const Tensor gc = random_input(c.shape(), 33, false);
    c.backward(gc);
    // da = gc b^T, db = a^T gc
    check_close(a.grad(), matmul_reference(values(gc), values(b), s.m, s.n, s.k, false, true), 1e-12);
    check_close(b.grad(), matmul_reference(values(a), values(gc), s.k, s.m, s.n, true, false), 1e-12);
  }
}

TEST_CASE("linear: misuse throws errors that name the problem", "[ops][linear][errors]") {
  const Tensor x = zeros({4, 3});
  const Tensor w = zeros({5, 3});
  CHECK_THROWS_AS(linear(zeros({4, 3, 1}), w), ShapeError);
  CHECK_THROWS_WITH(linear(zeros({4, 3, 1}), w),
                    Catch::Contains("linear") && Catch::Contains("rank 2") && Catch::Contains("[4, 3, 1]"));
  CHECK_THROWS_AS(linear(x, zeros({15})), ShapeError);
  CHECK_THROWS_WITH(linear(x, zeros({15})), Catch::Contains("weight of rank 2"));
  CHECK_THROWS_AS(linear(x, zeros({5, 4})), ShapeError);
  CHECK_THROWS_WITH(linear(x, zeros({5, 4})),
                    Catch::Contains("input has 3 features") && Catch::Contains("weight expects 4"));
  CHECK_THROWS_AS(linear(x, w, zeros({4})), ShapeError);
  CHECK_THROWS_WITH(linear(x, w, zeros({4})), Catch::Contains("bias has shape [4], expected [5]"));
  CHECK_THROWS_AS(linear(x, zeros({5, 3}, {.dtype = DType::float64})), TypeError);
  CHECK_THROWS_WITH(linear(x, zeros({5, 3}, {.dtype = DType::float64})),
                    Catch::Contains("weight is float64 but the input is float32"));
  CHECK_THROWS_AS(linear(x, w, zeros({5}, {.dtype = DType::float64})), TypeError);
  CHECK_THROWS_AS(linear(zeros({4, 3}, {.dtype = DType::int64}), w), TypeError);

  CHECK_THROWS_AS(matmul(zeros({2, 3}), zeros({4, 2})), ShapeError);
  CHECK_THROWS_WITH(matmul(zeros({2, 3}), zeros({4, 2})), Catch::Contains("matmul") && Catch::Contains("[2, 3]") &&
                                                              Catch::Contains("[4, 2]") &&
                                                              Catch::Contains("inner extents 3 and 4"));
  CHECK_THROWS_AS(matmul(zeros({2, 3, 1}), zeros({3, 2})), ShapeError);
  CHECK_THROWS_WITH(matmul(zeros({3}), zeros({3, 2})), Catch::Contains("first operand of rank 2"));
  CHECK_THROWS_WITH(matmul(zeros({2, 3}), zeros({3})), Catch::Contains("second operand of rank 2"));
}
