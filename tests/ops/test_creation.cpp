// arange, full, full_like, zeros_like, ones_like: values, dtypes (inferred as PyTorch's),
// devices, misuse.
#include <catch2/catch.hpp>
#include <tinynet/tinynet.hpp>
#include <vector>

#include "ops/op_testing.hpp"

using namespace tinynet;
using namespace tinynet::testing;

TEST_CASE("arange: integer and floating ranges, dtypes as PyTorch infers them", "[ops][creation]") {
  CHECK(arange(5).dtype() == DType::int64);
  CHECK(all_values(arange(5)) == std::vector<double>{0, 1, 2, 3, 4});
  CHECK(arange(0).numel() == 0);
  CHECK(all_values(arange(2, 7)) == std::vector<double>{2, 3, 4, 5, 6});
  CHECK(arange(2, 7).dtype() == DType::int64);
  CHECK(all_values(arange(1, 10, 3)) == std::vector<double>{1, 4, 7});
  CHECK(all_values(arange(5, 0, -2)) == std::vector<double>{5, 3, 1});
  const Tensor f = arange(0.0, 1.0, 0.25);
  CHECK(f.dtype() == DType::float32);
  CHECK(all_values(f) == std::vector<double>{0, 0.25, 0.5, 0.75});
  CHECK(arange(0, 1.5).dtype() == DType::float32);
  CHECK(all_values(arange(0, 1.5)) == std::vector<double>{0, 1});
  // 0.1 steps: start + i * step, the count rounded up, as PyTorch's.
  const Tensor tenths = arange(0.0, 1.0, 0.1, {.dtype = DType::float64});
  REQUIRE(tenths.numel() == 10);
  for (std::int64_t i = 0; i < 10; ++i) CHECK(tenths.data<double>()[i] == static_cast<double>(i) * 0.1);
  const Tensor g = arange(-1, 1, 0.5, {.dtype = DType::float64, .requires_grad = true});
  CHECK(g.requires_grad());
  CHECK(all_values(g) == std::vector<double>{-1, -0.5, 0, 0.5});
  CHECK(arange(0, 3, 1, {.dtype = DType::int32}).dtype() == DType::int32);
  CHECK_THROWS_AS(arange(0, 5, 0), ValueError);
  CHECK_THROWS_WITH(arange(0, 5, 0), Catch::Contains("arange: step must be nonzero"));
  CHECK_THROWS_WITH(arange(0, 5, -1), Catch::Contains("arange: step -1 goes the wrong way from 0 to 5"));
}

TEST_CASE("full, full_like, zeros_like, ones_like: shape, dtype and device of another tensor", "[ops][creation]") {
  const Tensor x = random_input({2, 3}, 1, false);
  CHECK(all_values(full({2}, 2.5)) == std::vector<double>{2.5, 2.5});
  const Tensor f = full_like(x, 7.0);
  CHECK(f.shape() == x.shape());
  CHECK(f.dtype() == DType::float64);
  CHECK(all_values(f) == std::vector<double>(6, 7.0));
  CHECK(full_like(x, 1.0, {.dtype = DType::int64}).dtype() == DType::int64);
  CHECK(all_values(zeros_like(x)) == std::vector<double>(6, 0.0));
  CHECK(all_values(ones_like(x)) == std::vector<double>(6, 1.0));
  CHECK(zeros_like(x, {.dtype = DType::bool_}).dtype() == DType::bool_);
  CHECK(ones_like(x, {.dtype = DType::float32}).dtype() == DType::float32);
  CHECK_FALSE(zeros_like(random_input({2}, 2)).requires_grad());  // as PyTorch: options, not autograd state
  CHECK(ones_like(x, {.dtype = DType::float64, .requires_grad = true}).requires_grad());
}
