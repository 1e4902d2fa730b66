// adaptive_avg_pool2d: PyTorch's window rule against a loop written with floating floor and
// ceil, gradients, accumulation, bfloat16 and misuse.

#include <cmath>
#include <string>

#include "op_testing.hpp"

using namespace tinynet;
using namespace tinynet::testing;

namespace {

struct AdaptiveCase {
  Shape x;
  std::int64_t oh, ow;
};

// Divisible (plain average pooling), global, overlapping windows (7 -> 3, 5 -> 4), an output
// larger than the input (windows repeat inputs), a 1-wide plane, non-square everything.
const AdaptiveCase kCases[] = {
    {{2, 3, 8, 8}, 4, 4}, {{2, 3, 7, 5}, 1, 1},  {{1, 2, 7, 5}, 3, 4},     {{2, 1, 3, 2}, 5, 4},
    {{1, 2, 1, 9}, 1, 4}, {{3, 1, 6, 11}, 4, 3}, {{1, 1, 10, 10}, 10, 10},
};

std::vector<double> reference(const Tensor& x, std::int64_t oh, std::int64_t ow) {
  const std::int64_t planes = x.size(0) * x.size(1), h = x.size(2), w = x.size(3);
  const auto v = values(x);
  const auto lo = [](std::int64_t i, std::int64_t in, std::int64_t out) {
    return static_cast<std::int64_t>(std::floor(static_cast<double>(i * in) / static_cast<double>(out)));
  };
  const auto hi = [](std::int64_t i, std::int64_t in, std::int64_t out) {
    return static_cast<std::int64_t>(std::ceil(static_cast<double>((i + 1) * in) / static_cast<double>(out)));
  };
  std::vector<double> y;
  for (std::int64_t pl = 0; pl < planes; ++pl)
    for (std::int64_t oy = 0; oy < oh; ++oy)
      for (std::int64_t ox = 0; ox < ow; ++ox) {
        double total = 0, count = 0;
        for (std::int64_t i = lo(oy, h, oh); i < hi(oy, h, oh); ++i)
          for (std::int64_t j = lo(ox, w, ow); j < hi(ox, w, ow); ++j, ++count)
            total += v[static_cast<std::size_t>((pl * h + i) * w + j)];
        y.push_back(total / count);
      }
  return y;
}

}  // namespace

TEST_CASE("adaptive_avg_pool2d: PyTorch's windows, any sizes", "[ops][pool2d][adaptive]") {
  for (const auto& c : kCases) {
    INFO(c.x << " -> " << c.oh << "x" << c.ow);
    const Tensor x = random_input(c.x, 1, false);
    const Tensor y = adaptive_avg_pool2d(x, {c.oh, c.ow});
    CHECK(y.shape() == Shape{c.x[0], c.x[1], c.oh, c.ow});
    check_close(y, reference(x, c.oh, c.ow), 1e-14);
    check_close(adaptive_avg_pool2d(x.to(DType::float32), {c.oh, c.ow}), reference(x, c.oh, c.ow), 1e-6);
  }
  // Global pooling is the mean of each plane.
  const Tensor x = random_input({2, 3, 5, 7}, 2, false);
  check_close(adaptive_avg_pool2d(x, {1, 1}).flatten(), values(mean(x.view({6, 35}), 1)), 1e-14);
}

TEST_CASE("adaptive_avg_pool2d: gradients match finite differences and add up", "[ops][pool2d][adaptive][gradcheck]") {
  for (const auto& c : kCases) {
    INFO(c.x << " -> " << c.oh << "x" << c.ow);
    const auto fn = [&](std::span<const Tensor> in) { return adaptive_avg_pool2d(in[0], {c.oh, c.ow}); };
    check_gradients(fn, {random_input(c.x, 3)});
    check_accumulates(fn, {random_input(c.x, 4)});
  }
}

TEST_CASE("adaptive_avg_pool2d on bfloat16: the float32 result rounded once", "[ops][pool2d][adaptive][bf16]") {
  const Tensor x16 = cast(random_input({2, 3, 7, 9}, 5, false), DType::bfloat16);
  const Tensor y = adaptive_avg_pool2d(x16, {3, 4});
  REQUIRE(y.dtype() == DType::bfloat16);
  const Tensor expected = cast(adaptive_avg_pool2d(cast(x16, DType::float32), {3, 4}), DType::bfloat16);
  CHECK(values(cast(y, DType::float64)) == values(cast(expected, DType::float64)));
}

TEST_CASE("adaptive_avg_pool2d: misuse names the op and the shapes", "[ops][pool2d][adaptive][errors]") {
  CHECK_THROWS_AS(adaptive_avg_pool2d(zeros({3, 6, 6}), {2, 2}), ShapeError);
  CHECK_THROWS_WITH(adaptive_avg_pool2d(zeros({3, 6, 6}), {2, 2}),
                    Catch::Contains("adaptive_avg_pool2d") && Catch::Contains("[3, 6, 6]"));
  CHECK_THROWS_AS(adaptive_avg_pool2d(zeros({1, 3, 6, 6}), {0, 2}), ValueError);
  CHECK_THROWS_WITH(adaptive_avg_pool2d(zeros({1, 3, 6, 6}), {2, -1}),
                    Catch::Contains("adaptive_avg_pool2d") && Catch::Contains("output_size must be positive") &&
                        Catch::Contains("{2, -1}"));
  CHECK_THROWS_WITH(adaptive_avg_pool2d(zeros({1, 3, 0, 6}), {2, 2}), Catch::Contains("[1, 3, 0, 6]"));
  CHECK_THROWS_WITH(adaptive_avg_pool2d(zeros({1, 3, 6, 6}, {.dtype = DType::int64}), {2, 2}),
                    Catch::Contains("adaptive_avg_pool2d") && Catch::Contains("int64"));
}
