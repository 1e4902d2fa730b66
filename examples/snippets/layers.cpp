// docs/networks.md: the layers of a small CNN beyond the MNIST example's, and its summary.
#include <iostream>
#include <tinynet/tinynet.hpp>

using namespace tinynet;

// [layers]
using Net = nn::Sequential<nn::Input<3, 32, 32>,                                             // one sample
                           nn::Conv2d<16, 3, 1, 1, nn::no_bias>, nn::BatchNorm2d, nn::SiLU,  // -> 16 x 32 x 32
                           nn::Conv2d<32, 3, 2, 1, nn::no_bias>, nn::BatchNorm2d, nn::GELU,  // -> 32 x 16 x 16
                           nn::AdaptiveAvgPool2d<1, 1>, nn::Flatten,                         // -> 32
                           nn::Linear<64>, nn::BatchNorm1d, nn::LeakyReLU,                   // -> 64
                           nn::Linear<10>>;                                                  // -> 10

static_assert(Net::parameter_count == 8'026);  // nn::no_bias: the convolutions have no bias to count
// [layers]

int main() {
  manual_seed(1);
  // [configure]
  Net net(nn::GELU("tanh"), nn::LeakyReLU(0.2));
  std::cout << nn::summary(net, 128);  // or: std::cout << net;
  // [configure]
  const Tensor logits = net(randn({4, 3, 32, 32}));
  return logits.shape() == Shape{4, 10} && net.num_parameters() == Net::parameter_count ? 0 : 1;
}
