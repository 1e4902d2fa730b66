// conv2d with groups and dilation on the device against the CPU backend (float32 values
// and gradients, conv2d_relu, the Conv2d layer, autocast) and float64 gradchecks there.

#include "device_testing.hpp"

using namespace tinynet;
using namespace tinynet::testing;
using Inputs = std::span<const Tensor>;

namespace {

struct GroupedSettings {
  int stride, padding, dilation, groups;
};

}  // namespace

TEST_CASE("conv2d with groups and dilation matches the CPU", "[cuda]") {
  // Depthwise, depthwise with two filters a channel, groups with dilation and stride, dilation alone.
  const std::tuple<Shape, Shape, GroupedSettings> cases[] = {
      {{3, 4, 9, 7}, {4, 1, 3, 3}, {1, 1, 1, 4}},
      {{2, 3, 8, 8}, {6, 1, 3, 3}, {2, 1, 1, 3}},
      {{2, 4, 10, 9}, {6, 2, 3, 2}, {2, 2, 2, 2}},
      {{2, 3, 9, 9}, {4, 3, 3, 3}, {1, 0, 3, 1}},
  };
  for (const auto& [xs, ws, s] : cases) {
    INFO("x " << xs << " weight " << ws << " stride " << s.stride << " padding " << s.padding << " dilation "
              << s.dilation << " groups " << s.groups);
    const Tensor x = input32(xs, 50), w = input32(ws, 51), b = input32({ws[0]}, 52);
    check_same_on_device([=](Inputs t) { return conv2d(t[0], t[1], t[2], s.stride, s.padding, s.dilation, s.groups); },
                         {x, w, b});
    check_same_on_device(
        [=](Inputs t) { return conv2d_relu(t[0], t[1], Tensor(), s.stride, s.padding, s.dilation, s.groups); }, {x, w});
  }
}

TEST_CASE("Conv2d layers with groups and dilation match the CPU, autocast included", "[cuda]") {
  manual_seed(5);
  nn::Conv2d<6, 3, 1, 2, nn::dilation<2>, nn::groups<3>> conv(3);
  const Tensor x = input32({2, 3, 8, 8}, 53, false);
  const Tensor y_cpu = conv(x);
  Tensor y_cpu_bf16;
  {
    autocast scope(DeviceType::cpu);
    y_cpu_bf16 = conv(x);
  }
  conv.to(kCuda);
  check_close(host(conv(on_device(x))), values(y_cpu), kDeviceTolerance);
  Tensor y_bf16;
  {
    autocast scope(DeviceType::cuda);
    y_bf16 = conv(on_device(x));
  }
  CHECK(y_bf16.dtype() == DType::bfloat16);
  // float32 sums of the same bfloat16 products, rounded once: equal up to the sums' order.
  check_close(all_values(y_bf16), all_values(y_cpu_bf16), 1e-2);
}

TEST_CASE("float64 gradchecks of grouped and dilated conv2d pass on the device", "[cuda]") {
  check_gradients([](Inputs t) { return conv2d(t[0], t[1], t[2], 2, 2, 2, 2); },
                  {on_device(random_input({2, 4, 7, 6}, 54)), on_device(random_input({4, 2, 3, 3}, 55)),
                   on_device(random_input({4}, 56))});
  check_gradients([](Inputs t) { return conv2d_relu(t[0], t[1], t[2], 1, 1, 1, 3); },
                  {on_device(random_input({2, 3, 5, 5}, 57)), on_device(random_input({6, 1, 3, 3}, 58)),
                   on_device(random_input({6}, 59))});
}
