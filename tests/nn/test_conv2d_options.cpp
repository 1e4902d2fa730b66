// Conv2d's options nn::dilation<D>, nn::groups<G> and nn::no_bias: compile-time shapes and
// parameter counts, weight shapes and names as PyTorch's, the layer against the op.

#include <algorithm>
#include <catch2/catch.hpp>
#include <tinynet/tinynet.hpp>
#include <type_traits>

using namespace tinynet;
using namespace tinynet::nn;

namespace {

// A depthwise-separable network. PyTorch counts 3,882 parameters for the same net:
// /usr/bin/python3 -c "import torch.nn as nn; print(sum(p.numel() for p in nn.Sequential(
//   nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
//   nn.Conv2d(16, 16, 3, 1, 1, groups=16, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
//   nn.Conv2d(16, 32, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
//   nn.Conv2d(32, 32, 3, 2, 2, dilation=2, groups=4), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
//   nn.Linear(32, 10)).parameters()))"
using SeparableNet = Sequential<Input<3, 32, 32>, Conv2d<16, 3, 1, 1, no_bias>, BatchNorm2d, ReLU,
                                Conv2d<16, 3, 1, 1, groups<16>, no_bias>, BatchNorm2d, ReLU,  // depthwise
                                Conv2d<32, 1, 1, 0, no_bias>, BatchNorm2d, ReLU,              // pointwise
                                Conv2d<32, 3, 2, 2, dilation<2>, groups<4>>, AdaptiveAvgPool2d<1>, Flatten, Linear<10>>;
static_assert(SeparableNet::parameter_count == 3'882);
static_assert(std::is_same_v<SeparableNet::output_shape, Sample<10>>);

// The output extent with dilation D: (H + 2P - D(K - 1) - 1) / S + 1.
static_assert(
    std::is_same_v<Sequential<Input<2, 9, 9>, Conv2d<3, 3, 1, 0, dilation<2>>>::output_shape, Sample<3, 5, 5>>);
static_assert(
    std::is_same_v<Sequential<Input<2, 9, 9>, Conv2d<3, 3, 2, 2, dilation<2>>>::output_shape, Sample<3, 5, 5>>);
static_assert(
    std::is_same_v<Sequential<Input<4, 7, 6>, Conv2d<8, 2, 1, 0, dilation<3>>>::output_shape, Sample<8, 4, 3>>);
// Options in any order.
static_assert(Sequential<Input<4, 5, 5>, Conv2d<8, 3, 1, 1, no_bias, groups<2>>>::parameter_count == 8 * 2 * 9);
static_assert(Sequential<Input<4, 5, 5>, Conv2d<8, 3, 1, 1, groups<2>, no_bias>>::parameter_count == 8 * 2 * 9);
static_assert(Conv2d<8, 3, 1, 1, groups<2>, dilation<3>>::groups == 2 &&
              Conv2d<8, 3, 1, 1, groups<2>, dilation<3>>::dilation == 3 && Conv2d<8, 3>::groups == 1 &&
              Conv2d<8, 3>::dilation == 1);

bool same_values(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::equal(a.data<float>(), a.data<float>() + a.numel(), b.data<float>());
}

}  // namespace

TEST_CASE("Conv2d groups and dilation: weights as PyTorch shapes and names them", "[nn][conv2d]") {
  SeparableNet net;
  CHECK(net.num_parameters() == SeparableNet::parameter_count);
  const StateDict sd = net.state_dict();
  CHECK(sd.at("0.weight").shape() == Shape{16, 3, 3, 3});
  CHECK(sd.at("3.weight").shape() == Shape{16, 1, 3, 3});
  CHECK_FALSE(sd.contains("3.bias"));
  CHECK(sd.at("6.weight").shape() == Shape{32, 16, 1, 1});
  CHECK(sd.at("9.weight").shape() == Shape{32, 8, 3, 3});
  CHECK(sd.at("9.bias").shape() == Shape{32});
  CHECK(net(randn({2, 3, 32, 32})).shape() == Shape{2, 10});
}

TEST_CASE("Conv2d groups and dilation: the layer computes the op with its settings", "[nn][conv2d]") {
  manual_seed(3);
  Conv2d<6, 3, 2, 2, dilation<2>, groups<3>> conv(3);
  CHECK(conv.weight().shape() == Shape{6, 1, 3, 3});
  const Tensor x = randn({2, 3, 9, 9});
  NoGradGuard no_grad;
  CHECK(same_values(conv(x), conv2d(x, conv.weight(), conv.bias(), 2, 2, 2, 3)));
  CHECK(same_values(conv.forward_with(ReLU{}, x), relu(conv2d(x, conv.weight(), conv.bias(), 2, 2, 2, 3))));

  // Sequential fuses the ReLU after it, with the same settings.
  Sequential<Input<4, 6, 6>, Conv2d<4, 3, 1, 1, groups<4>>, ReLU> depthwise;
  const Tensor y = randn({2, 4, 6, 6});
  const auto& layer = depthwise.get<0>();
  CHECK(same_values(depthwise(y), relu(conv2d(y, layer.weight(), layer.bias(), 1, 1, 1, 4))));
}

TEST_CASE("Conv2d groups: in_channels not divisible by groups is a ValueError", "[nn][conv2d][errors]") {
  using Grouped = Conv2d<4, 3, 1, 1, groups<2>>;
  CHECK_THROWS_AS(Grouped(3), ValueError);
  CHECK_THROWS_WITH(Grouped(3), Catch::Contains("Conv2d: in_channels = 3 is not divisible by groups = 2"));
  CHECK_THROWS_WITH(Grouped(0), Catch::Contains("in_channels must be positive"));
  CHECK_THROWS_WITH(Grouped(4, false), Catch::Contains("nn::no_bias"));
}
