// Control: this network fits and must compile.
#include <tinynet/tinynet.hpp>
using namespace tinynet::nn;
using Net = Sequential<Input<1, 28, 28>, Conv2d<32, 3>, ReLU, MaxPool2d<2>, Flatten, Linear<10, 5408>>;
Net net;
