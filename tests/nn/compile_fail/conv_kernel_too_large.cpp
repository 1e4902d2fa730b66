// Must not compile: a 5x5 kernel over a 3x3 input.
#include <tinynet/tinynet.hpp>
using namespace tinynet::nn;
Sequential<Input<1, 8, 8>, Conv2d<4, 3>, MaxPool2d<2>, Conv2d<8, 5>> net;
