#pragma once
// ResNet-20, the network He et al. built for CIFAR-10 (three stages of 16, 32 and 64
// channels, three basic blocks each), composed at compile time for an input sample
// [C, H, W]: 1x28x28 for MNIST and Fashion-MNIST, 3x32x32 for CIFAR-10. bench/train_bench
// (--model resnet20) and bench/pytorch_bench.py (its PyTorch twin, the same layers)
// train it.

#include <cstdint>
#include <tinynet/tinynet.hpp>

namespace resnet {

namespace nn = tinynet::nn;

/// A 3x3 convolution with padding 1 and no bias (the batch norm after it has one).
template <std::int64_t C, std::int64_t Stride = 1>
using Conv3x3 = nn::Conv2d<C, 3, Stride, 1, nn::no_bias>;

/// A basic block: relu(x + bn(conv(relu(bn(conv(x)))))); the ReLU is the next entry.
template <std::int64_t C>
using Block = nn::Residual<Conv3x3<C>, nn::BatchNorm2d, nn::ReLU, Conv3x3<C>, nn::BatchNorm2d>;

/// The first block of stages 2 and 3: stride 2, twice the channels, a 1x1 projection shortcut.
template <std::int64_t C>
using DownBlock = nn::Residual<nn::Body<Conv3x3<C, 2>, nn::BatchNorm2d, nn::ReLU, Conv3x3<C>, nn::BatchNorm2d>,
                               nn::Shortcut<nn::Conv2d<C, 1, 2, 0, nn::no_bias>, nn::BatchNorm2d>>;

template <std::int64_t C, std::int64_t H, std::int64_t W>
using ResNet20 = nn::Sequential<nn::Input<C, H, W>, Conv3x3<16>, nn::BatchNorm2d, nn::ReLU,         //
                                Block<16>, nn::ReLU, Block<16>, nn::ReLU, Block<16>, nn::ReLU,      //
                                DownBlock<32>, nn::ReLU, Block<32>, nn::ReLU, Block<32>, nn::ReLU,  //
                                DownBlock<64>, nn::ReLU, Block<64>, nn::ReLU, Block<64>, nn::ReLU,  //
                                nn::AdaptiveAvgPool2d<1>, nn::Flatten, nn::Linear<10>>;

// PyTorch counts the same for bench/pytorch_bench.py's ResNet20(1) and ResNet20(3).
static_assert(ResNet20<1, 28, 28>::parameter_count == 272'186);
static_assert(ResNet20<3, 32, 32>::parameter_count == 272'474);

/// Multiply-adds of one image's forward pass through the convolutions and the classifier.
constexpr double forward_macs(std::int64_t c, std::int64_t h, std::int64_t w) {
  double macs = 16.0 * c * 9 * h * w;  // stem
  std::int64_t in = 16;
  for (std::int64_t stage = 0, channels = 16; stage < 3; ++stage, channels *= 2) {
    for (int block = 0; block < 3; ++block) {
      const bool down = block == 0 && stage > 0;
      if (down) h = (h + 1) / 2, w = (w + 1) / 2;
      macs += static_cast<double>(channels) * in * 9 * h * w + static_cast<double>(channels) * channels * 9 * h * w;
      if (down) macs += static_cast<double>(channels) * in * h * w;
      in = channels;
    }
  }
  return macs + 64.0 * 10;
}

}  // namespace resnet
