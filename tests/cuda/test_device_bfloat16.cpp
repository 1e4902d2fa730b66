// bfloat16 tensors on the device: moved, copied, filled and converted bit for bit as on the
// CPU (conversions go through the host); ops refuse them as on the CPU.
// Built twice: by g++ on the emulated device (CPU-only CI) and by nvcc for a real GPU.

#include <cstring>

#include "device_testing.hpp"

using namespace tinynet;
using namespace tinynet::testing;

namespace {

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

}  // namespace

TEST_CASE("bfloat16 tensors move to the device, convert and fill as on the CPU", "[cuda][bfloat16]") {
  Tensor patterns(Shape{256, 256}, {DType::bfloat16, Device::cpu(), false});
  for (std::uint32_t b = 0; b <= 0xFFFF; ++b)
    patterns.data<bfloat16>()[b] = bfloat16::from_bits(static_cast<std::uint16_t>(b));
  const Tensor d = patterns.to(kCuda);
  CHECK(d.device() == kCuda);
  CHECK(same_bits(host(d), patterns));
  CHECK(same_bits(host(d.clone()), patterns));

  const Tensor f = from_vector<float>({1.0f + 0.00390625f, 0.1f, -2.5f}, {3});
  const Tensor on_device = f.to(kCuda).to(DType::bfloat16);
  CHECK(on_device.device() == kCuda);
  CHECK(same_bits(host(on_device), f.to(DType::bfloat16)));
  CHECK(same_bits(host(on_device.to(DType::float32)), f.to(DType::bfloat16).to(DType::float32)));

  Tensor filled = zeros({4}, {.dtype = DType::bfloat16, .device = kCuda});
  filled.fill_(0.1);
  CHECK(same_bits(host(filled), full({4}, 0.1, {.dtype = DType::bfloat16})));
  CHECK(filled.to(Device::cpu()).at<bfloat16>({3}).bits == 0x3DCD);

  CHECK_THROWS_AS(relu(on_device), TypeError);
}
