// Must not compile: Linear<128, 9216> after a layer giving 10816 features.
#include <tinynet/tinynet.hpp>
using namespace tinynet::nn;
using Net =
    Sequential<Input<1, 28, 28>, Conv2d<32, 3>, ReLU, Conv2d<64, 3, 1, 1>, MaxPool2d<2>, Flatten, Linear<128, 9216>>;
Net net;
