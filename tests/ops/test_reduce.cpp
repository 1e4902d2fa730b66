#include <catch2/catch.hpp>
#include <string>
#include <tinynet/tinynet.hpp>
#include <vector>

#include "ops/op_testing.hpp"

using namespace tinynet;
using namespace tinynet::testing;

namespace {

/// Naive reduction over `dim` of a tensor of shape `s`: sum (or mean) of every line along it.
std::vector<double> reduce_reference(const Tensor& x, int dim, bool mean) {
  const Shape& s = x.shape();
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= s[d];
  for (int d = dim + 1; d < s.rank(); ++d) inner *= s[d];
  const std::int64_t n = s[dim];
  const auto v = values(x);
  std::vector<double> r;
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      double acc = 0;
      for (std::int64_t k = 0; k < n; ++k) acc += v[static_cast<std::size_t>((o * n + k) * inner + i)];
      r.push_back(mean ? acc / static_cast<double>(n) : acc);
    }
  return r;
}

Shape without_dim(const Shape& s, int dim, bool keepdim) {
  Shape r;
  for (int d = 0; d < s.rank(); ++d) {
    if (d != dim)
      r.push_back(s[d]);
    else if (keepdim)
      r.push_back(1);
  }
  return r;
}

const Shape kReduceShapes[] = {{3, 4, 5}, {1, 7}, {2, 1, 3}, {5}};

}  // namespace

TEST_CASE("reduce: sum and mean of everything match a naive loop", "[ops][reduce]") {
  for (const auto& s : kReduceShapes) {
    INFO(s);
    const Tensor x = random_input(s, 1, false);
    double acc = 0;
    for (double v : values(x)) acc += v;
    const Tensor total = sum(x), avg = mean(x);
    CHECK(total.shape() == Shape{});
    CHECK(avg.shape() == Shape{});
    check_close(total, {acc}, 1e-14);
    check_close(avg, {acc / static_cast<double>(x.numel())}, 1e-14);
  }
}

TEST_CASE("reduce: sum and mean over a dim, with and without keepdim", "[ops][reduce]") {
  for (const auto& s : kReduceShapes)
    for (int dim = 0; dim < s.rank(); ++dim)
      for (bool keepdim : {false, true}) {
        INFO(s << " dim " << dim << " keepdim " << keepdim);
        const Tensor x = random_input(s, 2, false);
        const Tensor ys = sum(x, dim, keepdim), ym = mean(x, dim, keepdim);
        CHECK(ys.shape() == without_dim(s, dim, keepdim));
        CHECK(ym.shape() == without_dim(s, dim, keepdim));
        check_close(ys, reduce_reference(x, dim, false), 1e-14);
        check_close(ym, reduce_reference(x, dim, true), 1e-14);
        // A negative dim counts from the end.
        check_close(sum(x, dim - s.rank(), keepdim), reduce_reference(x, dim, false), 1e-14);
      }
}

TEST_CASE("reduce: float32 sums are accumulated accurately", "[ops][reduce]") {
  // 1e6 copies of 0.1f: a float accumulator drifts by ~1e-2 relative, a double one does not.
  const Tensor x = full({1000000}, 0.1);
  CHECK(sum(x).item() == Approx(1e6 * static_cast<double>(0.1f)).epsilon(1e-6));
  CHECK(mean(x).item() == Approx(static_cast<double>(0.1f)).epsilon(1e-6));
}

TEST_CASE("reduce: gradients match finite differences", "[ops][reduce][gradcheck]") {
  for (const auto& s : kReduceShapes) {
    INFO(s);
    check_gradients([](std::span<const Tensor> in) { return sum(in[0]); }, {random_input(s, 3)});
    check_gradients([](std::span<const Tensor> in) { return mean(in[0]); }, {random_input(s, 4)});
    for (int dim = 0; dim < s.rank(); ++dim)
      for (bool keepdim : {false, true}) {
        INFO("dim " << dim << " keepdim " << keepdim);
        check_gradients([&](std::span<const Tensor> in) { return sum(in[0], dim, keepdim); }, {random_input(s, 5)});
        check_gradients([&](std::span<const Tensor> in) { return mean(in[0], dim, keepdim); }, {random_input(s, 6)});
      }
  }
}

TEST_CASE("reduce: the tape names the op, even over a dim of extent 1", "[ops][reduce]") {
  const Tensor x = random_input({3, 1}, 8);
  CHECK(std::string(sum(x).grad_fn()->name()) == "sum");
  CHECK(std::string(sum(x, 1).grad_fn()->name()) == "sum");
  CHECK(std::string(mean(x).grad_fn()->name()) == "mean");
  CHECK(std::string(mean(x, 1).grad_fn()->name()) == "mean");
  CHECK(std::string(mean(random_input({1}, 9)).grad_fn()->name()) == "mean");
}

TEST_CASE("reduce: argmax picks the first maximum along a dim", "[ops][reduce]") {
  const Tensor x = random_input({3, 4, 5}, 7, false);
  for (int dim = 0; dim < 3; ++dim) {
    INFO("dim " << dim);
    const Tensor idx = argmax(x, dim);
    CHECK(idx.dtype() == DType::int64);
    CHECK_FALSE(idx.requires_grad());
    CHECK(idx.shape() == without_dim(x.shape(), dim, false));
    CHECK(argmax(x, dim, true).shape() == without_dim(x.shape(), dim, true));
    const Shape& s = x.shape();
    std::int64_t outer = 1, inner = 1;
    for (int d = 0; d < dim; ++d) outer *= s[d];
    for (int d = dim + 1; d < 3; ++d) inner *= s[d];
    const auto v = values(x);
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t i = 0; i < inner; ++i) {
        std::int64_t best = 0;
        for (std::int64_t k = 1; k < s[dim]; ++k)
          if (v[static_cast<std::size_t>((o * s[dim] + k) * inner + i)] >
              v[static_cast<std::size_t>((o * s[dim] + best) * inner + i)])
            best = k;
        CHECK(idx.data<std::int64_t>()[o * inner + i] == best);
      }
  }
  const Tensor ties = from_vector<double>({1, 3, 3, 2, 5, 5, 5, 0}, {2, 4});
  const Tensor t = argmax(ties, 1);
  CHECK(t.data<std::int64_t>()[0] == 1);
  CHECK(t.data<std::int64_t>()[1] == 0);
}

TEST_CASE("reduce: misuse throws errors that name the problem", "[ops][reduce][errors]") {
  const Tensor x = zeros({2, 3});
  CHECK_THROWS_AS(sum(x, 2), IndexError);
  CHECK_THROWS_WITH(sum(x, 2), Catch::Contains("dimension 2 out of range") && Catch::Contains("[2, 3]"));
  CHECK_THROWS_AS(mean(x, -3), IndexError);
  CHECK_THROWS_AS(argmax(x, 5), IndexError);
  CHECK_THROWS_AS(mean(zeros({2, 0}), 1), ValueError);
  CHECK_THROWS_WITH(mean(zeros({2, 0}), 1), Catch::Contains("mean") && Catch::Contains("empty"));
  CHECK_THROWS_AS(mean(zeros({0})), ValueError);
  CHECK_THROWS_AS(argmax(zeros({3, 0}), 1), ValueError);
  CHECK_THROWS_WITH(argmax(zeros({3, 0}), 1), Catch::Contains("argmax") && Catch::Contains("empty"));
  const Tensor labels = zeros({4}, {.dtype = DType::int64});
  CHECK_THROWS_AS(mean(labels), TypeError);  // sum(labels) counts (test_compare.cpp); a mean has no int64 result
  CHECK_THROWS_WITH(mean(labels), Catch::Contains("mean") && Catch::Contains("int64"));
}
