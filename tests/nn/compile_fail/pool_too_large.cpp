// Must not compile: a 4x4 pooling window over a 3x3 input.
#include <tinynet/tinynet.hpp>
using namespace tinynet::nn;
Sequential<Input<2, 3, 3>, MaxPool2d<4>> net;
