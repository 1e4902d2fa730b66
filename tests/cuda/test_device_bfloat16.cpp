// bfloat16 tensors on the device: moved, copied, filled and converted bit for bit as on the
// CPU (conversions between floating dtypes on the device, the others through the host);
// matmul refuses them as on the CPU.
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
  // Every bit pattern (NaNs, infinities, subnormals) widened on the device as on the host.
  CHECK(same_bits(host(d.to(DType::float32)), patterns.to(DType::float32)));
  CHECK(same_bits(host(d.to(DType::float64)), patterns.to(DType::float64)));
  const Tensor wide = mul(patterns.to(DType::float64), 1.0 + 1.0 / 1024);  // values between bfloat16's
  CHECK(same_bits(host(wide.to(kCuda).to(DType::bfloat16)), wide.to(DType::bfloat16)));
  CHECK(same_bits(host(wide.to(kCuda).to(DType::float32)), wide.to(DType::float32)));

  const Tensor f = from_vector<float>({1.0f + 0.00390625f, 0.1f, -2.5f}, {3});
  const Tensor on_device = f.to(kCuda).to(DType::bfloat16);
  CHECK(on_device.device() == kCuda);
  CHECK(same_bits(host(on_device), f.to(DType::bfloat16)));
  CHECK(same_bits(host(on_device.to(DType::float32)), f.to(DType::bfloat16).to(DType::float32)));

  Tensor filled = zeros({4}, {.dtype = DType::bfloat16, .device = kCuda});
  filled.fill_(0.1);
  CHECK(same_bits(host(filled), full({4}, 0.1, {.dtype = DType::bfloat16})));
  CHECK(filled.to(Device::cpu()).at<bfloat16>({3}).bits == 0x3DCD);

  CHECK_THROWS_AS(matmul(on_device.reshape({1, 3}), on_device.reshape({3, 1})), TypeError);
}

TEST_CASE("bfloat16 activations on the device: relu, pooling, dropout, views and cast as on the CPU",
          "[cuda][bfloat16]") {
  // Values that use all of float's bits, rounded to bfloat16 by cast; each op computes in
  // float and rounds once on both backends, adding overlapping windows' gradients in the
  // same order, so the results and gradients agree bit for bit.
  Generator gen(21);
  const Tensor x = uniform({2, 3, 9, 11}, -2.0, 2.0, {.requires_grad = true}, gen);
  const Tensor xd = on_device(x);
  const auto forward = [](const Tensor& in) {
    const Tensor a = cast(in, DType::bfloat16);
    Generator drop(22);
    const Tensor m = max_pool2d(relu(a), 3, 2, 1);
    const Tensor v = avg_pool2d(dropout(a, 0.25, true, drop), 3, 2, 1);
    return std::vector<Tensor>{flatten(m, 1), flatten(v, 1)};
  };
  const std::vector<Tensor> on_cpu = forward(x), on_dev = forward(xd);
  Generator wgen(23);
  for (std::size_t i = 0; i < on_cpu.size(); ++i) {
    REQUIRE(on_dev[i].dtype() == DType::bfloat16);
    REQUIRE(on_dev[i].device() == kCuda);
    CHECK(same_bits(host(on_dev[i]), on_cpu[i]));
  }
  const Tensor w0 = uniform(on_cpu[0].shape(), -1.0, 1.0, {}, wgen),
               w1 = uniform(on_cpu[1].shape(), -1.0, 1.0, {}, wgen);
  const auto loss = [&](const std::vector<Tensor>& outs, const Device& dev) {
    return sum(mul(cast(outs[0], DType::float32), w0.to(dev))) + sum(mul(cast(outs[1], DType::float32), w1.to(dev)));
  };
  loss(on_cpu, Device::cpu()).backward();
  loss(on_dev, kCuda).backward();
  CHECK(same_bits(host(xd.grad()), x.grad()));
}
