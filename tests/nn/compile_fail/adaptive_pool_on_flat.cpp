// Must not compile: AdaptiveAvgPool2d on a flat sample.
#include <tinynet/tinynet.hpp>
using namespace tinynet::nn;
Sequential<Input<64>, Linear<32>, AdaptiveAvgPool2d<1, 1>> net;
