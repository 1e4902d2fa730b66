// Comparisons, the bool dtype and the sums that count, on the device against the CPU backend.
// Built twice: by g++ on the emulated device (CPU-only CI) and by nvcc for a real GPU.

#include "device_testing.hpp"

using namespace tinynet;
using namespace tinynet::testing;

namespace {

/// Small integers (many ties) converted to `dtype`.
Tensor device_small_ints(const Shape& s, std::uint64_t seed, DType dtype) {
  Tensor t = random_input(s, seed, false, -2.0, 3.0);
  for (std::int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = std::floor(t.data<double>()[i]);
  return t.to(dtype);
}

}  // namespace

TEST_CASE("comparisons match the CPU for every dtype, broadcast and scalar", "[cuda]") {
  Tensor (*const ops[])(const Tensor&, const Tensor&) = {eq, ne, lt, le, gt, ge};
  for (const DType dtype : {DType::float32, DType::float64, DType::int32, DType::int64, DType::bool_})
    for (auto op : ops) {
      INFO(dtype);
      const Tensor a = device_small_ints({4, 3, 5}, 1, dtype), b = device_small_ints({3, 1}, 2, dtype);
      const Tensor same = device_small_ints({4, 3, 5}, 3, dtype);
      const Tensor y = op(a.to(kCuda), b.to(kCuda));
      CHECK(y.device() == kCuda);
      CHECK(y.dtype() == DType::bool_);
      CHECK(all_values(y) == all_values(op(a, b)));
      CHECK(all_values(op(a.to(kCuda), same.to(kCuda))) == all_values(op(a, same)));
    }
  const Tensor x = input32({6, 7}, 4, false);
  CHECK(all_values(x.to(kCuda) > 0.25) == all_values(x > 0.25));
  CHECK(all_values(0.25 >= x.to(kCuda)) == all_values(0.25 >= x));
  const Tensor labels = tensor<std::int64_t>({3, 1, 4, 1, 5});
  CHECK(all_values(labels.to(kCuda) == 1) == std::vector<double>{0, 1, 0, 1, 0});
}

TEST_CASE("bool tensors and counting sums on the device", "[cuda]") {
  const Tensor mask = from_vector<bool>({true, false, true, true, false, true}, {2, 3});
  const Tensor d = mask.to(kCuda);
  CHECK(d.dtype() == DType::bool_);
  CHECK(all_values(d) == all_values(mask));
  CHECK(sum(d).device() == kCuda);
  CHECK(sum(d).item<std::int64_t>() == 4);
  CHECK(all_values(sum(d, 0)) == all_values(sum(mask, 0)));
  CHECK(all_values(sum(d, -1, true)) == all_values(sum(mask, -1, true)));
  CHECK(all_values(full({3}, 1.0, {.dtype = DType::bool_, .device = kCuda})) == std::vector<double>{1, 1, 1});
  CHECK(all_values(input32({5}, 5, false).to(kCuda).to(DType::bool_)) == std::vector<double>(5, 1));
  // The README's evaluation, on the device.
  const Tensor out = input32({40, 10}, 6, false), target = argmax(input32({40, 10}, 7, false), 1);
  CHECK(sum(eq(argmax(out.to(kCuda), 1), target.to(kCuda))).item<std::int64_t>() ==
        sum(eq(argmax(out, 1), target)).item<std::int64_t>());
}

TEST_CASE("comparisons refuse operands on two devices, naming both", "[cuda]") {
  const Tensor a = zeros({2});
  CHECK_THROWS_AS(eq(a, a.to(kCuda)), TypeError);
  CHECK_THROWS_WITH(eq(a, a.to(kCuda)), Catch::Contains("eq") && Catch::Contains("cuda:0") && Catch::Contains("cpu"));
}
