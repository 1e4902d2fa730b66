// docs/networks.md: grouped (depthwise) and dilated convolutions as Conv2d options.
#include <tinynet/tinynet.hpp>

using namespace tinynet;

// [separable]
// A depthwise-separable block (MobileNet's): a 3x3 convolution of each channel on its own
// (groups = channels), then a 1x1 convolution mixing them; a dilated 3x3 widens the view.
using Net = nn::Sequential<nn::Input<3, 32, 32>,                                                   // 3 x 32 x 32
                           nn::Conv2d<16, 3, 1, 1, nn::no_bias>, nn::BatchNorm2d, nn::ReLU,        // 16 x 32 x 32
                           nn::Conv2d<16, 3, 1, 1, nn::groups<16>, nn::no_bias>, nn::BatchNorm2d,  // depthwise
                           nn::ReLU, nn::Conv2d<32, 1, 1, 0, nn::no_bias>, nn::BatchNorm2d,        // pointwise
                           nn::ReLU, nn::Conv2d<32, 3, 1, 2, nn::dilation<2>, nn::groups<4>>,      // 32 x 32 x 32
                           nn::ReLU, nn::AdaptiveAvgPool2d<1, 1>, nn::Flatten, nn::Linear<10>>;

static_assert(Net::parameter_count == 3'882);  // PyTorch's count for the same layers
// [separable]

int main() {
  manual_seed(1);
  Net net;
  // [functional]
  const Tensor x = randn({4, 8, 20, 20});
  const Tensor depthwise = randn({8, 1, 3, 3});  // [out, in / groups, kH, kW]
  const Tensor y = conv2d(x, depthwise, Tensor(), /*stride=*/1, /*padding=*/2, /*dilation=*/2, /*groups=*/8);
  // [functional]
  const Tensor logits = net(randn({2, 3, 32, 32}));
  return y.shape() == Shape{4, 8, 20, 20} && logits.shape() == Shape{2, 10} &&
                 net.num_parameters() == Net::parameter_count
             ? 0
             : 1;
}
