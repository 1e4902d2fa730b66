// Must not compile: Conv2d on a flat input.
#include <tinynet/tinynet.hpp>
using namespace tinynet::nn;
Sequential<Input<1, 8, 8>, Flatten, Conv2d<4, 3>> net;
