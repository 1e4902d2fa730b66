#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <tinynet/tinynet.hpp>

using namespace tinynet;

namespace {

// Restores the default (denormals kept) when a test ends.
struct FlushRestorer {
  ~FlushRestorer() { set_flush_denormal(false); }
};

// 1e-30 * 1e-10 = 1e-40 is a denormal float; under flush-to-zero the product is 0.
Tensor denormal_products(std::int64_t n) {
  const Tensor a = full({n}, 1e-30), b = full({n}, 1e-10);
  return mul(a, b);
}

}  // namespace

TEST_CASE("set_flush_denormal: kernels on every thread flush denormals, and stop when turned off", "[core][fp_mode]") {
  FlushRestorer restore;
  const std::int64_t n = 1 << 20;  // large enough that the elementwise kernel runs in parallel chunks
  const float denormal = 1e-30f * 1e-10f;
  REQUIRE(std::fpclassify(denormal) == FP_SUBNORMAL);

  CHECK_FALSE(flush_denormal());
  Tensor kept = denormal_products(n);
  for (std::int64_t i = 0; i < n; i += 4099) CHECK(std::fpclassify(kept.data<float>()[i]) == FP_SUBNORMAL);

  REQUIRE(set_flush_denormal(true));
  CHECK(flush_denormal());
  Tensor flushed = denormal_products(n);
  std::int64_t nonzero = 0;
  for (std::int64_t i = 0; i < n; ++i) nonzero += flushed.data<float>()[i] != 0.0f;
  CHECK(nonzero == 0);

  set_flush_denormal(false);
  Tensor again = denormal_products(n);
  for (std::int64_t i = 0; i < n; i += 4099) CHECK(std::fpclassify(again.data<float>()[i]) == FP_SUBNORMAL);
}
