// where, clamp, abs, sqrt, maximum and minimum on the device against the CPU backend:
// values and gradients. Built twice: by g++ on the emulated device and by nvcc.

#include "device_testing.hpp"

using namespace tinynet;
using namespace tinynet::testing;
using Inputs = std::span<const Tensor>;

TEST_CASE("where matches the CPU, broadcast operands included", "[cuda]") {
  const Tensor mask = input32({4, 3, 5}, 1, false) > 0.0, col = input32({3, 1}, 2, false) > 0.0;
  const auto on = [](const Tensor& m, Inputs x) { return x[0].device().is_cpu() ? m : m.to(kCuda); };
  check_same_on_device([&](Inputs x) { return where(on(mask, x), x[0], x[1]); },
                       {input32({4, 3, 5}, 3), input32({4, 3, 5}, 4)});
  check_same_on_device([&](Inputs x) { return where(on(col, x), x[0], x[1]); },
                       {input32({5}, 5), input32({4, 1, 1}, 6)});
  check_same_on_device([&](Inputs x) { return where(on(mask, x), x[0], 0.0); }, {input32({4, 3, 5}, 7)});
  const Tensor labels = tensor<std::int64_t>({1, 2, 3});
  const Tensor m3 = tensor<bool>({true, false, true});
  CHECK(all_values(where(m3.to(kCuda), labels.to(kCuda), -1.0)) == std::vector<double>{1, -1, 3});
}

TEST_CASE("clamp, abs, sqrt, maximum and minimum match the CPU", "[cuda]") {
  const Tensor a = input32({4, 3, 5}, 8), b = input32({4, 3, 5}, 9), row = input32({5}, 10);
  const Tensor pos = uniform({4, 3, 5}, 0.5, 2.0, {.requires_grad = true});
  check_same_on_device([](Inputs x) { return clamp(x[0], -0.5, 0.5); }, {a});
  check_same_on_device([](Inputs x) { return clamp_min(x[0], 0.1); }, {a});
  check_same_on_device([](Inputs x) { return abs(x[0]); }, {a});
  check_same_on_device([](Inputs x) { return tinynet::sqrt(x[0]); }, {pos});
  check_same_on_device([](Inputs x) { return maximum(x[0], x[1]); }, {a, b});
  check_same_on_device([](Inputs x) { return minimum(x[0], x[1]); }, {a, row});
  check_same_on_device([](Inputs x) { return maximum(x[0], x[0]); }, {a});  // ties: half each
}

TEST_CASE("amax, amin, argmax and argmin match the CPU", "[cuda]") {
  const Tensor a = distinct_values({4, 6, 5}, 11).to(DType::float32).requires_grad_();
  check_same_on_device([](Inputs x) { return amax(x[0]); }, {a});
  check_same_on_device([](Inputs x) { return amin(x[0]); }, {a});
  for (int dim = -3; dim < 3; ++dim) {
    INFO("dim " << dim);
    check_same_on_device([dim](Inputs x) { return amax(x[0], dim); }, {a});
    check_same_on_device([dim](Inputs x) { return amin(x[0], dim, true); }, {a});
    CHECK(all_values(argmax(a.to(kCuda), dim)) == all_values(argmax(a, dim)));
    CHECK(all_values(argmin(a.to(kCuda), dim, true)) == all_values(argmin(a, dim, true)));
  }
  // Ties share the gradient; integer tensors reduce too.
  const Tensor ties = from_vector<float>({1, 3, 3, 2, 5, 5, 5, 0}, {2, 4}).requires_grad_();
  check_same_on_device([](Inputs x) { return amax(x[0], 1); }, {ties});
  const Tensor ints = tensor<std::int64_t>({4, 9, 9, 1, 0, 7}).view({2, 3});
  CHECK(all_values(amax(ints.to(kCuda), 1)) == std::vector<double>{9, 7});
  CHECK(all_values(argmax(ints.to(kCuda), 1)) == std::vector<double>{1, 2});
}
