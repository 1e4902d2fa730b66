// Must not compile: BatchNorm1d after a convolution (its [C, H, W] samples need BatchNorm2d).
#include <tinynet/tinynet.hpp>
using namespace tinynet::nn;
Sequential<Input<1, 8, 8>, Conv2d<4, 3>, BatchNorm1d> net;
