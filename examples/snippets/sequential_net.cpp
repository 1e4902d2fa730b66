// docs/networks.md: a network composed at compile time.
#include <cstdio>
#include <tinynet/tinynet.hpp>

using namespace tinynet;

// [sequential]
using Net = nn::Sequential<nn::Input<1, 28, 28>,                    // one sample: 1 x 28 x 28
                           nn::Conv2d<32, 3>, nn::ReLU,             // -> 32 x 26 x 26
                           nn::Conv2d<64, 3>, nn::ReLU,             // -> 64 x 24 x 24
                           nn::MaxPool2d<2>, nn::Dropout,           // -> 64 x 12 x 12
                           nn::Flatten,                             // -> 9216
                           nn::Linear<128>, nn::ReLU, nn::Dropout,  // -> 128
                           nn::Linear<10>, nn::LogSoftmax>;         // -> 10

static_assert(std::is_same_v<Net::output_shape, nn::Sample<10>>);
static_assert(Net::parameter_count == 1'199'882);
// [sequential]

int main() {
  manual_seed(1);
  // [configure]
  Net net(nn::Dropout(0.25), nn::Dropout(0.5));  // the two Dropouts, in order
  // [configure]
  const Tensor x = randn({8, 1, 28, 28});
  const Tensor log_probs = net(x);  // [8, 10]
  for (const auto& [name, p] : net.named_parameters()) std::printf("%-10s %s\n", name.c_str(), p.shape().str().c_str());
  return log_probs.shape() == Shape{8, 10} ? 0 : 1;
}
