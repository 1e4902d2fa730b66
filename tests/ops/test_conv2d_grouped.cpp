// conv2d with groups and dilation (the direct kernels of backend/cpu/conv2d_general.hpp):
// values against a loop written here, float64 gradchecks, accumulation, threads, autocast
// and misuse.

#include <catch2/catch.hpp>
#include <string>
#include <tinynet/tinynet.hpp>
#include <vector>

#include "ops/op_testing.hpp"
#include "thread_count_restorer.hpp"

using namespace tinynet;
using namespace tinynet::testing;

namespace {

struct GroupedCase {
  std::int64_t n, c, h, w, out_c, kh, kw;
  int stride, padding, dilation, groups;
};

// Depthwise (groups = channels) with one and two filters per channel, two and three groups,
// dilation 2 and 3 with and without groups, stride 2 with dilation, non-square kernels,
// 1x1 grouped kernels, a dilated kernel as large as the padded input, batch 1.
const GroupedCase kGroupedCases[] = {
    {2, 4, 7, 6, 4, 3, 3, 1, 1, 1, 4}, {2, 3, 6, 6, 6, 3, 3, 2, 1, 1, 3},  {1, 4, 9, 8, 6, 3, 3, 1, 2, 2, 2},
    {2, 2, 9, 9, 3, 3, 3, 2, 2, 2, 1}, {3, 6, 8, 7, 9, 2, 3, 1, 0, 3, 3},  {2, 6, 5, 5, 4, 1, 1, 1, 0, 1, 2},
    {1, 3, 5, 5, 3, 3, 3, 1, 1, 3, 3}, {2, 4, 10, 9, 8, 3, 2, 3, 1, 2, 4}, {2, 1, 7, 7, 2, 2, 2, 1, 0, 4, 1},
};

std::string describe_grouped(const GroupedCase& k) {
  return "x [" + std::to_string(k.n) + "," + std::to_string(k.c) + "," + std::to_string(k.h) + "," +
         std::to_string(k.w) + "] weight [" + std::to_string(k.out_c) + "," + std::to_string(k.c / k.groups) + "," +
         std::to_string(k.kh) + "," + std::to_string(k.kw) + "] stride " + std::to_string(k.stride) + " padding " +
         std::to_string(k.padding) + " dilation " + std::to_string(k.dilation) + " groups " + std::to_string(k.groups);
}

Shape grouped_weight_shape(const GroupedCase& k) { return {k.out_c, k.c / k.groups, k.kh, k.kw}; }

std::int64_t grouped_out_extent(std::int64_t in, std::int64_t k, const GroupedCase& c) {
  return (in + 2 * c.padding - c.dilation * (k - 1) - 1) / c.stride + 1;
}

/// y[n,o,y,x] = b[o] + sum_{c<Cg,i,j} W[o,c,i,j] x[n, G*Cg+c, y*s+i*d-p, x*s+j*d-p], G = o's group.
std::vector<double> grouped_reference(const Tensor& x, const Tensor& w, const Tensor& b, const GroupedCase& k) {
  const std::int64_t oh = grouped_out_extent(k.h, k.kh, k), ow = grouped_out_extent(k.w, k.kw, k);
  const std::int64_t cg = k.c / k.groups, og = k.out_c / k.groups;
  const auto vx = values(x), vw = values(w);
  std::vector<double> y;
  for (std::int64_t n = 0; n < k.n; ++n)
    for (std::int64_t o = 0; o < k.out_c; ++o)
      for (std::int64_t oy = 0; oy < oh; ++oy)
        for (std::int64_t ox = 0; ox < ow; ++ox) {
          double acc = b.defined() ? values(b)[static_cast<std::size_t>(o)] : 0.0;
          for (std::int64_t c = 0; c < cg; ++c)
            for (std::int64_t i = 0; i < k.kh; ++i)
              for (std::int64_t j = 0; j < k.kw; ++j) {
                const std::int64_t iy = oy * k.stride + i * k.dilation - k.padding,
                                   ix = ox * k.stride + j * k.dilation - k.padding;
                if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
                const std::int64_t ci = (o / og) * cg + c;
                acc += vw[static_cast<std::size_t>(((o * cg + c) * k.kh + i) * k.kw + j)] *
                       vx[static_cast<std::size_t>(((n * k.c + ci) * k.h + iy) * k.w + ix)];
              }
          y.push_back(acc);
        }
  return y;
}

Tensor run_grouped(const GroupedCase& k, const Tensor& x, const Tensor& w, const Tensor& b, bool relu = false) {
  return relu ? conv2d_relu(x, w, b, k.stride, k.padding, k.dilation, k.groups)
              : conv2d(x, w, b, k.stride, k.padding, k.dilation, k.groups);
}

}  // namespace

TEST_CASE("conv2d groups and dilation: forward matches a direct loop", "[ops][conv2d]") {
  for (const auto& k : kGroupedCases) {
    INFO(describe_grouped(k));
    const Tensor x = random_input({k.n, k.c, k.h, k.w}, 1, false);
    const Tensor w = random_input(grouped_weight_shape(k), 2, false);
    const Tensor b = random_input({k.out_c}, 3, false);
    const Tensor y = run_grouped(k, x, w, b);
    CHECK(y.shape() == Shape{k.n, k.out_c, grouped_out_extent(k.h, k.kh, k), grouped_out_extent(k.w, k.kw, k)});
    check_close(y, grouped_reference(x, w, b, k), 1e-13);
    check_close(run_grouped(k, x, w, Tensor()), grouped_reference(x, w, Tensor(), k), 1e-13);
    check_close(run_grouped(k, x.to(DType::float32), w.to(DType::float32), b.to(DType::float32)),
                grouped_reference(x, w, b, k), 1e-5);
  }
}

TEST_CASE("conv2d groups and dilation: gradients match finite differences", "[ops][conv2d][gradcheck]") {
  for (const auto& k : kGroupedCases) {
    INFO(describe_grouped(k));
    for (bool relu : {false, true}) {
      INFO((relu ? "conv2d_relu" : "conv2d"));
      const auto fn = [&](std::span<const Tensor> in) { return run_grouped(k, in[0], in[1], in[2], relu); };
      check_gradients(fn, {random_input({k.n, k.c, k.h, k.w}, 4), random_input(grouped_weight_shape(k), 5),
                           random_input({k.out_c}, 6)});
      // Each gradient on its own: the kernels skip the ones not needed.
      check_gradients(fn, {random_input({k.n, k.c, k.h, k.w}, 7), random_input(grouped_weight_shape(k), 8, false),
                           random_input({k.out_c}, 9, false)});
      check_gradients(
          fn, {random_input({k.n, k.c, k.h, k.w}, 10, false), random_input(grouped_weight_shape(k), 11), Tensor()});
    }
  }
}

TEST_CASE("conv2d groups and dilation: backward adds into existing gradients", "[ops][conv2d]") {
  for (const auto& k : kGroupedCases) {
    INFO(describe_grouped(k));
    for (bool relu : {false, true})
      check_accumulates([&](std::span<const Tensor> in) { return run_grouped(k, in[0], in[1], in[2], relu); },
                        {random_input({k.n, k.c, k.h, k.w}, 12), random_input(grouped_weight_shape(k), 13),
                         random_input({k.out_c}, 14)});
  }
}

TEST_CASE("conv2d groups and dilation: conv2d_relu is relu(conv2d), float32 agrees with float64", "[ops][conv2d]") {
  for (const auto& k : kGroupedCases) {
    INFO(describe_grouped(k));
    std::vector<std::vector<double>> grads[2];
    for (DType dt : {DType::float64, DType::float32}) {
      std::vector<std::vector<double>> outs, fused_grads;
      for (bool fused : {false, true}) {
        Tensor x = random_input({k.n, k.c, k.h, k.w}, 15, false).to(dt).requires_grad_();
        Tensor w = random_input(grouped_weight_shape(k), 16, false).to(dt).requires_grad_();
        Tensor b = random_input({k.out_c}, 17, false).to(dt).requires_grad_();
        const Tensor y = fused ? run_grouped(k, x, w, b, true) : relu(run_grouped(k, x, w, b));
        y.backward(random_input(y.shape(), 18, false).to(dt));
        outs.push_back(values(y));
        for (const Tensor& t : {x, w, b}) fused_grads.push_back(values(t.grad()));
      }
      CHECK(outs[1] == outs[0]);
      for (std::size_t i = 0; i < 3; ++i) check_close(fused_grads[3 + i], fused_grads[i], 1e-14);
      grads[dt == DType::float32] = fused_grads;
    }
    for (std::size_t i = 0; i < grads[0].size(); ++i) check_close(grads[1][i], grads[0][i], 1e-4);
  }
}

TEST_CASE("conv2d groups and dilation: one and two threads give the same values", "[ops][conv2d]") {
  ThreadCountRestorer restore;
  const GroupedCase k{5, 6, 9, 9, 6, 3, 3, 1, 2, 2, 3};
  std::vector<std::vector<double>> results;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    Tensor x = random_input({k.n, k.c, k.h, k.w}, 20, false).to(DType::float32).requires_grad_();
    Tensor w = random_input(grouped_weight_shape(k), 21, false).to(DType::float32).requires_grad_();
    Tensor b = random_input({k.out_c}, 22, false).to(DType::float32).requires_grad_();
    const Tensor y = run_grouped(k, x, w, b);
    y.backward(random_input(y.shape(), 23, false).to(DType::float32));
    for (const Tensor& t : {y, x.grad(), w.grad(), b.grad()}) results.push_back(values(t));
  }
  for (std::size_t i = 0; i < 4; ++i) CHECK(results[4 + i] == results[i]);
}

TEST_CASE("conv2d groups and dilation under autocast: bfloat16 products, float32 sums, a bfloat16 output",
          "[ops][conv2d][autocast]") {
  // The same kernels on operands rounded to bfloat16 beforehand give the same float32 sums.
  const GroupedCase k{2, 4, 8, 8, 8, 3, 3, 1, 2, 2, 4};
  const auto rounded = [](const Tensor& t) { return t.to(DType::bfloat16).to(DType::float32); };
  const Tensor x0 = random_input({k.n, k.c, k.h, k.w}, 30, false).to(DType::float32);
  const Tensor w0 = random_input(grouped_weight_shape(k), 31, false).to(DType::float32);
  const Tensor b0 = random_input({k.out_c}, 32, false).to(DType::float32);
  Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_(), b = b0.clone().requires_grad_();
  Tensor y;
  {
    autocast scope(DeviceType::cpu);
    y = run_grouped(k, x, w, b);
  }
  CHECK(y.dtype() == DType::bfloat16);
  const Tensor gy = rounded(random_input(y.shape(), 33, false).to(DType::float32));
  y.backward(gy.to(DType::bfloat16));

  Tensor xr = rounded(x0).requires_grad_(), wr = rounded(w0).requires_grad_(), br = b0.clone().requires_grad_();
  const Tensor expected = run_grouped(k, xr, wr, br);
  expected.backward(gy);
  CHECK(values(y.to(DType::float32)) == values(expected.to(DType::bfloat16).to(DType::float32)));
  CHECK(x.grad().dtype() == DType::float32);
  CHECK(values(x.grad()) == values(xr.grad()));
  CHECK(values(w.grad()) == values(wr.grad()));
  CHECK(values(b.grad()) == values(br.grad()));
}

TEST_CASE("conv2d groups and dilation: misuse throws errors that name the problem", "[ops][conv2d][errors]") {
  const Tensor x = zeros({2, 4, 8, 8});
  CHECK_THROWS_AS(conv2d(x, zeros({6, 2, 3, 3}), Tensor(), 1, 0, 1, 0), ValueError);
  CHECK_THROWS_WITH(conv2d(x, zeros({6, 2, 3, 3}), Tensor(), 1, 0, 1, 0),
                    Catch::Contains("conv2d: groups must be >= 1, got 0"));
  CHECK_THROWS_AS(conv2d(x, zeros({6, 4, 3, 3}), Tensor(), 1, 0, 0), ValueError);
  CHECK_THROWS_WITH(conv2d(x, zeros({6, 4, 3, 3}), Tensor(), 1, 0, 0),
                    Catch::Contains("conv2d: dilation must be >= 1, got 0"));
  CHECK_THROWS_AS(conv2d(x, zeros({5, 2, 3, 3}), Tensor(), 1, 0, 1, 2), ShapeError);
  CHECK_THROWS_WITH(conv2d(x, zeros({5, 2, 3, 3}), Tensor(), 1, 0, 1, 2),
                    Catch::Contains("weight of shape [5, 2, 3, 3] has 5 output channels, not divisible by groups = 2"));
  CHECK_THROWS_AS(conv2d(x, zeros({6, 3, 3, 3}), Tensor(), 1, 0, 1, 2), ShapeError);
  CHECK_THROWS_WITH(conv2d(x, zeros({6, 3, 3, 3}), Tensor(), 1, 0, 1, 2), Catch::Contains("input has 4 channels") &&
                                                                              Catch::Contains("weight expects 6") &&
                                                                              Catch::Contains("groups = 2"));
  CHECK_THROWS_AS(conv2d(x, zeros({6, 4, 3, 3}), Tensor(), 1, 0, 4), ShapeError);
  CHECK_THROWS_WITH(conv2d(x, zeros({6, 4, 3, 3}), Tensor(), 1, 0, 4),
                    Catch::Contains("kernel 3x3 with dilation 4 spans 9x9, larger than the padded input 8x8"));
}
