// leaky_relu, gelu, silu, adaptive_avg_pool2d and BatchNorm1d on the device against the CPU
// backend (float32 values and gradients, float64 gradchecks, bfloat16 bit for bit).
// Built twice: by g++ on the emulated device (CPU-only CI) and by nvcc for a real GPU.

#include <cstring>

#include "device_testing.hpp"

using namespace tinynet;
using namespace tinynet::testing;
using Inputs = std::span<const Tensor>;

TEST_CASE("leaky_relu, gelu and silu match the CPU", "[cuda][activations]") {
  const Tensor a = input32({4, 3, 5}, 71, true, -5.0, 5.0);
  check_same_on_device([](Inputs x) { return leaky_relu(x[0]); }, {a});
  check_same_on_device([](Inputs x) { return leaky_relu(x[0], 0.3); }, {a});
  check_same_on_device([](Inputs x) { return gelu(x[0]); }, {a});
  check_same_on_device([](Inputs x) { return gelu(x[0], "tanh"); }, {a});
  check_same_on_device([](Inputs x) { return silu(x[0]); }, {a});
  check_gradients([](Inputs t) { return gelu(t[0]) + silu(t[0]) * gelu(t[0], "tanh"); },
                  {on_device(random_input({3, 4}, 72, true, -3.0, 3.0))});
  check_gradients([](Inputs t) { return leaky_relu(t[0], 0.2); }, {on_device(away_from_zero({3, 4}, 73))});
}

TEST_CASE("adaptive_avg_pool2d matches the CPU for any sizes", "[cuda][pool2d]") {
  const Tensor x = input32({2, 3, 7, 5}, 74);
  for (const auto& [oh, ow] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {3, 4}, {7, 5}, {9, 8}, {2, 1}}) {
    INFO(oh << "x" << ow);
    check_same_on_device([oh, ow](Inputs t) { return adaptive_avg_pool2d(t[0], {oh, ow}); }, {x});
  }
  check_gradients(
      [](Inputs t) {
        return adaptive_avg_pool2d(t[0], {3, 4});
      },
      {on_device(random_input({1, 2, 7, 5}, 75))});
  check_gradients(
      [](Inputs t) {
        return adaptive_avg_pool2d(t[0], {5, 4});
      },
      {on_device(random_input({1, 2, 3, 2}, 76))});
}

TEST_CASE("BatchNorm1d over [N, C] and [N, C, L] matches the CPU, running statistics included", "[cuda][batchnorm]") {
  // [40, 3, 9]: more values per channel than the device kernels' threads per channel.
  for (const Shape& shape : {Shape{6, 3}, Shape{4, 3, 5}, Shape{40, 3, 9}}) {
    INFO(shape);
    nn::BatchNorm1d cpu(3), dev(3);
    dev.to(kCuda);
    check_same_on_device([&](Inputs t) { return t[0].device() == kCuda ? dev(t[0]) : cpu(t[0]); },
                         {input32(shape, 77)});
    check_close(host(dev.running_mean()), values(cpu.running_mean()), kDeviceTolerance);
    check_close(host(dev.running_var()), values(cpu.running_var()), kDeviceTolerance);
    CHECK(dev.num_batches_tracked().device() == kCuda);
    CHECK(host(dev.num_batches_tracked()).item<std::int64_t>() == cpu.num_batches_tracked().item<std::int64_t>());
    cpu.eval();
    dev.eval();
    check_same_on_device([&](Inputs t) { return t[0].device() == kCuda ? dev(t[0]) : cpu(t[0]); },
                         {input32(shape, 78)});
  }
  check_gradients(
      [](Inputs t) { return batch_norm(t[0], Tensor(), Tensor(), t[1], t[2]); },
      {on_device(random_input({3, 2, 4}, 79)), on_device(random_input({2}, 80)), on_device(random_input({2}, 81))});
}

TEST_CASE("bfloat16 leaky_relu, gelu, silu and adaptive_avg_pool2d on the device as on the CPU", "[cuda][bfloat16]") {
  const Tensor a = cast(input32({2, 3, 7, 5}, 82, false, -4.0, 4.0), DType::bfloat16);
  const auto same = [](const Tensor& d, const Tensor& c) {
    const Tensor h = host(d);
    return h.dtype() == c.dtype() && h.shape() == c.shape() && std::memcmp(h.raw_data(), c.raw_data(), c.nbytes()) == 0;
  };
  const Tensor d = a.to(kCuda);
  CHECK(same(leaky_relu(d, 0.2), leaky_relu(a, 0.2)));
  CHECK(same(gelu(d), gelu(a)));
  CHECK(same(gelu(d, "tanh"), gelu(a, "tanh")));
  CHECK(same(silu(d), silu(a)));
  CHECK(same(adaptive_avg_pool2d(d, {3, 4}), adaptive_avg_pool2d(a, {3, 4})));
}
