#include <catch2/catch.hpp>
#include <tinynet/tinynet.hpp>

#include "network_gradcheck.hpp"

using namespace tinynet;
using namespace tinynet::nn;

namespace {

// A ResNet basic block: conv, batch norm, ReLU, conv, batch norm, added to the input.
template <std::int64_t C>
using BasicBlock = Residual<Conv2d<C, 3, 1, 1>, BatchNorm2d, ReLU, Conv2d<C, 3, 1, 1>, BatchNorm2d>;
// The first block of a stage: stride 2 and twice the channels, a 1x1 projection shortcut.
template <std::int64_t C>
using DownBlock = Residual<Body<Conv2d<C, 3, 2, 1>, BatchNorm2d, ReLU, Conv2d<C, 3, 1, 1>, BatchNorm2d>,
                           Shortcut<Conv2d<C, 1, 2, 0>, BatchNorm2d>>;

// ResNet-20 as He et al. built it for CIFAR (three stages of 16, 32, 64 channels, three
// blocks each), here for 1x28x28 input.
using ResNet20 = Sequential<Input<1, 28, 28>, Conv2d<16, 3, 1, 1>, BatchNorm2d, ReLU,          //
                            BasicBlock<16>, ReLU, BasicBlock<16>, ReLU, BasicBlock<16>, ReLU,  //
                            DownBlock<32>, ReLU, BasicBlock<32>, ReLU, BasicBlock<32>, ReLU,   //
                            DownBlock<64>, ReLU, BasicBlock<64>, ReLU, BasicBlock<64>, ReLU,   //
                            AvgPool2d<7>, Flatten, Linear<10>>;

// The same network in PyTorch 1.13 (convolutions with bias, as here) has 272,970 parameters:
// sum(p.numel() for p in model.parameters()), the model built as tests/nn/test_residual.cpp's
// ResNet20 (body and shortcut as nn.Sequential members of a block).
static_assert(ResNet20::parameter_count == 272'970);
static_assert(std::is_same_v<ResNet20::output_shape, Sample<10>>);
static_assert(std::is_same_v<Sequential<Input<16, 28, 28>, DownBlock<32>>::output_shape, Sample<32, 14, 14>>);

}  // namespace

TEST_CASE("Residual: y = body(x) + x, the body's layers called as in a Sequential", "[nn][residual]") {
  manual_seed(4);
  Sequential<Input<2, 5, 5>, Residual<Conv2d<2, 3, 1, 1>, Tanh, Conv2d<2, 3, 1, 1>>> net;
  const Tensor x = randn({3, 2, 5, 5});
  const StateDict sd = net.state_dict();
  const Tensor expected = conv2d(tinynet::tanh(conv2d(x, sd.at("0.body.0.weight"), sd.at("0.body.0.bias"), 1, 1)),
                                 sd.at("0.body.2.weight"), sd.at("0.body.2.bias"), 1, 1) +
                          x;
  const Tensor y = net(x);
  REQUIRE(y.shape() == x.shape());
  for (std::int64_t i = 0; i < y.numel(); ++i) CHECK(y.data<float>()[i] == expected.data<float>()[i]);
}

TEST_CASE("Residual absorbs the ReLU after it: add_relu, the same values and gradients", "[nn][residual]") {
  manual_seed(5);
  Sequential<Input<2, 5, 5>, Residual<Conv2d<2, 3, 1, 1>, BatchNorm2d, ReLU, Conv2d<2, 3, 1, 1>>, ReLU> fused;
  Sequential<Input<2, 5, 5>, Residual<Conv2d<2, 3, 1, 1>, BatchNorm2d, ReLU, Conv2d<2, 3, 1, 1>>> block;
  block.load_state_dict(fused.state_dict());
  const Tensor x = randn({3, 2, 5, 5});
  const Tensor y = fused(x), expected = relu(block(x));
  CHECK(y.grad_fn()->name() == std::string("add_relu"));
  const std::vector<float> yv(y.data<float>(), y.data<float>() + y.numel());
  CHECK(yv == std::vector<float>(expected.data<float>(), expected.data<float>() + expected.numel()));
  sum(y).backward();
  sum(expected).backward();
  const auto fused_grads = fused.named_parameters(), block_grads = block.named_parameters();
  REQUIRE(fused_grads.size() == block_grads.size());
  for (std::size_t i = 0; i < fused_grads.size(); ++i) {
    INFO(fused_grads[i].first);
    const Tensor g = fused_grads[i].second.grad(), e = block_grads[i].second.grad();
    CHECK(std::vector<float>(g.data<float>(), g.data<float>() + g.numel()) ==
          std::vector<float>(e.data<float>(), e.data<float>() + e.numel()));
  }
}

TEST_CASE("Residual absorbs the ReLU after it under autocast: a float32 body beside a bfloat16 shortcut",
          "[nn][residual][autocast]") {
  // Under autocast a convolution's output is bfloat16 and batch norm's float32: the sum
  // promotes to float32, as add does.
  manual_seed(6);
  Sequential<Input<3, 8, 8>, Residual<Body<Conv2d<4, 3, 1, 1>, BatchNorm2d>, Shortcut<Conv2d<4, 1, 1, 0>>>, ReLU> fused;
  Sequential<Input<3, 8, 8>, Residual<Body<Conv2d<4, 3, 1, 1>, BatchNorm2d>, Shortcut<Conv2d<4, 1, 1, 0>>>> block;
  block.load_state_dict(fused.state_dict());
  const Tensor x = randn({2, 3, 8, 8});
  autocast scope(DeviceType::cpu, DType::bfloat16);
  const Tensor y = fused(x), expected = relu(block(x));
  REQUIRE(y.dtype() == DType::float32);
  CHECK(std::vector<float>(y.data<float>(), y.data<float>() + y.numel()) ==
        std::vector<float>(expected.data<float>(), expected.data<float>() + expected.numel()));
}

TEST_CASE("Residual: PyTorch-style names, parameters and buffers of both paths", "[nn][residual]") {
  ResNet20 net;
  CHECK(net.num_parameters() == ResNet20::parameter_count);
  const StateDict sd = net.state_dict();
  CHECK(sd.at("3.body.0.weight").shape() == Shape{16, 16, 3, 3});
  CHECK(sd.at("3.body.1.running_mean").shape() == Shape{16});
  CHECK(sd.at("9.body.0.weight").shape() == Shape{32, 16, 3, 3});
  CHECK(sd.at("9.shortcut.0.weight").shape() == Shape{32, 16, 1, 1});
  CHECK(sd.at("9.shortcut.1.weight").shape() == Shape{32});
  CHECK_FALSE(sd.contains("3.shortcut.0.weight"));
  CHECK(sd.at("23.weight").shape() == Shape{10, 64});
  // The model summary lists a block as one entry, with its output shape and parameters.
  const std::string table = summary(net);
  CHECK_THAT(table, Catch::Contains("Residual") && Catch::Contains("272,970"));
  // eval() reaches the batch norms inside the blocks.
  net.eval();
  CHECK_FALSE(net.get<9>().is_training());
  const Tensor y = net(randn({2, 1, 28, 28}));
  CHECK(y.shape() == Shape{2, 10});
}

TEST_CASE("Residual: gradients of both paths pass gradcheck in float64", "[nn][residual][gradcheck]") {
  manual_seed(5);
  using Net = Sequential<Input<2, 6, 6>, Residual<Conv2d<2, 3, 1, 1>, Tanh, Conv2d<2, 3, 1, 1>>, Tanh,
                         Residual<Body<Conv2d<3, 3, 2, 1>, Sigmoid>, Shortcut<Conv2d<3, 1, 2, 0>>>, Flatten, Linear<4>>;
  Net net;
  net.to(DType::float64);
  const Tensor x = randn({2, 2, 6, 6}, {.dtype = DType::float64, .requires_grad = true});
  check_network_gradients(net, x, Net::parameter_count);
}

TEST_CASE("Residual: an error in a block names the block and the layer", "[nn][residual][errors]") {
  Residual<Conv2d<4, 3, 1, 1>, ReLU> block{Sample<4, 5, 5>{}};
  try {
    block(zeros({1, 3, 5, 5}));  // 3 channels where the block was built for 4
    FAIL("no error");
  } catch (const ShapeError& e) {
    CHECK(e.module_path() == "body.0");
    CHECK_THAT(e.what(), Catch::EndsWith("(in Residual.body.0 [Conv2d])"));
  }
}
