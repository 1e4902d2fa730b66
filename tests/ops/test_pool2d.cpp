#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <tinynet/tinynet.hpp>
#include <vector>

#include "fill_uninitialized.hpp"
#include "ops/op_testing.hpp"

using namespace tinynet;
using namespace tinynet::testing;

namespace {

struct PoolCase {
  Shape x;
  int kernel, stride, padding;  // stride 0: the kernel size
};

// Batch 1, the classic 2x2/2, overlapping windows, odd and non-square inputs, stride 2
// with padding 1, a window as large as the padded input, a 1x1 window.
const PoolCase kPoolCases[] = {
    {{1, 1, 4, 4}, 2, 0, 0}, {{2, 3, 7, 5}, 3, 2, 1}, {{1, 2, 5, 6}, 3, 1, 1}, {{2, 1, 5, 5}, 2, 1, 0},
    {{1, 2, 6, 9}, 2, 2, 1}, {{1, 1, 3, 3}, 5, 1, 2}, {{3, 2, 3, 4}, 1, 1, 0},
};

std::int64_t out_extent(std::int64_t in, int k, int s, int p) { return (in + 2 * p - k) / s + 1; }

/// Max (padding ignored) or mean (padding counted as zeros) over every window.
std::vector<double> pool_reference(const Tensor& x, int k, int s, int p, bool max) {
  if (s == 0) s = k;
  const std::int64_t planes = x.size(0) * x.size(1), h = x.size(2), w = x.size(3);
  const std::int64_t oh = out_extent(h, k, s, p), ow = out_extent(w, k, s, p);
  const auto v = values(x);
  std::vector<double> y;
  for (std::int64_t pl = 0; pl < planes; ++pl)
    for (std::int64_t oy = 0; oy < oh; ++oy)
      for (std::int64_t ox = 0; ox < ow; ++ox) {
        double best = -std::numeric_limits<double>::infinity(), total = 0;
        for (std::int64_t i = 0; i < k; ++i)
          for (std::int64_t j = 0; j < k; ++j) {
            const std::int64_t iy = oy * s + i - p, ix = ox * s + j - p;
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
            const double e = v[static_cast<std::size_t>((pl * h + iy) * w + ix)];
            best = std::max(best, e);
            total += e;
          }
        y.push_back(max ? best : total / (k * k));
      }
  return y;
}

Shape pooled_shape(const PoolCase& c) {
  const int s = c.stride == 0 ? c.kernel : c.stride;
  return {c.x[0], c.x[1], out_extent(c.x[2], c.kernel, s, c.padding), out_extent(c.x[3], c.kernel, s, c.padding)};
}

}  // namespace

TEST_CASE("pool2d: max and avg match a naive window loop", "[ops][pool2d]") {
  for (const auto& c : kPoolCases) {
    INFO("x " << c.x << " kernel " << c.kernel << " stride " << c.stride << " padding " << c.padding);
    const Tensor x = random_input(c.x, 1, false);
    const Tensor ym = max_pool2d(x, c.kernel, c.stride, c.padding);
    const Tensor ya = avg_pool2d(x, c.kernel, c.stride, c.padding);
    CHECK(ym.shape() == pooled_shape(c));
    CHECK(ya.shape() == pooled_shape(c));
    check_close(ym, pool_reference(x, c.kernel, c.stride, c.padding, true), 0.0);
    check_close(ya, pool_reference(x, c.kernel, c.stride, c.padding, false), 1e-15);
    const Tensor xf = x.to(DType::float32);
    check_close(max_pool2d(xf, c.kernel, c.stride, c.padding), pool_reference(x, c.kernel, c.stride, c.padding, true),
                1e-7);
    check_close(avg_pool2d(xf, c.kernel, c.stride, c.padding), pool_reference(x, c.kernel, c.stride, c.padding, false),
                1e-6);
  }
}

TEST_CASE("pool2d: max of an all-negative window ignores the zero padding", "[ops][pool2d]") {
  const Tensor x = full({1, 1, 2, 2}, -3.0, {.dtype = DType::float64});
  const Tensor y = max_pool2d(x, 2, 1, 1);
  CHECK(y.shape() == Shape{1, 1, 3, 3});
  for (double v : values(y)) CHECK(v == -3.0);
}

TEST_CASE("pool2d: gradients match finite differences", "[ops][pool2d][gradcheck]") {
  for (const auto& c : kPoolCases) {
    INFO("x " << c.x << " kernel " << c.kernel << " stride " << c.stride << " padding " << c.padding);
    // Distinct values 0.01 apart: no window has a tie for its maximum within the step.
    check_gradients([&](std::span<const Tensor> in) { return max_pool2d(in[0], c.kernel, c.stride, c.padding); },
                    {distinct_values(c.x, 2)});
    check_gradients([&](std::span<const Tensor> in) { return avg_pool2d(in[0], c.kernel, c.stride, c.padding); },
                    {random_input(c.x, 3)});
  }
}

TEST_CASE("pool2d: misuse throws errors that name the problem", "[ops][pool2d][errors]") {
  const Tensor x = zeros({2, 3, 6, 6});
  for (const char* op : {"max_pool2d", "avg_pool2d"}) {
    INFO(op);
    const auto pool = [op](const Tensor& t, int k, int s, int p) {
      return std::string(op) == "max_pool2d" ? max_pool2d(t, k, s, p) : avg_pool2d(t, k, s, p);
    };
    CHECK_THROWS_AS(pool(zeros({3, 6, 6}), 2, 2, 0), ShapeError);
    CHECK_THROWS_WITH(pool(zeros({3, 6, 6}), 2, 2, 0),
                      Catch::Contains(op) && Catch::Contains("input of rank 4") && Catch::Contains("[3, 6, 6]"));
    CHECK_THROWS_AS(pool(x, 0, 1, 0), ValueError);
    CHECK_THROWS_WITH(pool(x, 0, 1, 0), Catch::Contains("kernel_size must be >= 1, got 0"));
    CHECK_THROWS_AS(pool(x, 2, -1, 0), ValueError);
    CHECK_THROWS_WITH(pool(x, 2, -1, 0), Catch::Contains("stride must be >= 1, got -1"));
    CHECK_THROWS_AS(pool(x, 3, 1, 2), ValueError);
    CHECK_THROWS_WITH(pool(x, 3, 1, 2), Catch::Contains("padding must be between 0 and half the kernel (3), got 2"));
    CHECK_THROWS_AS(pool(x, 2, 2, -1), ValueError);
    CHECK_THROWS_WITH(pool(x, 2, 2, -1), Catch::Contains("got -1"));
    CHECK_THROWS_AS(pool(zeros({1, 1, 6, 3}), 4, 1, 0), ShapeError);
    CHECK_THROWS_WITH(pool(zeros({1, 1, 6, 3}), 4, 1, 0),
                      Catch::Contains(op) && Catch::Contains("kernel 4x4 is larger than the padded input 6x3"));
    CHECK_THROWS_AS(pool(zeros({2, 3, 6, 6}, {.dtype = DType::int64}), 2, 2, 0), TypeError);
    CHECK_THROWS_WITH(pool(zeros({2, 3, 6, 6}, {.dtype = DType::int64}), 2, 2, 0), Catch::Contains("int64"));
  }
}

TEST_CASE("pool2d: 2x2 max pool in float32 picks the same maxima, ties and NaNs as float64", "[ops][pool2d]") {
  // float32 2x2/2 pooling takes a vectorised path on AVX-512 machines (16 outputs at a
  // time, masked tails); float64 takes the scalar loop. Values from {0, 1, 2, 3} make ties
  // common; each tie must route the gradient to the same (first) element. New tensors start
  // as NaN: inputs no window covers (odd extents) must get their zero gradient written.
  tinynet::testing::FillUninitialized fill;
  for (const Shape& shape :
       {Shape{2, 3, 4, 4}, Shape{1, 2, 7, 7}, Shape{2, 2, 24, 24}, Shape{1, 1, 5, 33}, Shape{1, 2, 6, 70}}) {
    INFO("x " << shape);
    std::vector<double> v = values(random_input(shape, 4, false, 0.0, 4.0));
    for (double& e : v) e = std::floor(e);
    v[v.size() / 3] = std::numeric_limits<double>::quiet_NaN();
    std::vector<std::vector<double>> outs, grads, grads_twice;
    for (DType dt : {DType::float64, DType::float32}) {
      Tensor x = from_vector(v, shape).to(dt).requires_grad_();
      const Tensor y = max_pool2d(x, 2);
      y.backward(random_input(y.shape(), 5, false).to(dt));
      outs.push_back(values(y));
      grads.push_back(values(x.grad()));
      // A second pass adds into the gradient already there (the kernels' accumulate mode).
      max_pool2d(x, 2).backward(random_input(y.shape(), 6, false).to(dt));
      grads_twice.push_back(values(x.grad()));
    }
    REQUIRE(outs[0].size() == outs[1].size());
    std::size_t nans = 0;
    for (std::size_t i = 0; i < outs[0].size(); ++i) {
      if (std::isnan(outs[0][i])) {
        ++nans;
        CHECK(std::isnan(outs[1][i]));
      } else {
        CHECK(outs[1][i] == outs[0][i]);
      }
    }
    CHECK(nans <= 1);
    for (std::size_t i = 0; i < grads[0].size(); ++i) CHECK((grads[1][i] != 0) == (grads[0][i] != 0));
    check_close(grads[1], grads[0], 1e-7);
    check_close(grads_twice[1], grads_twice[0], 1e-6);
  }
}
