// Must not compile: Linear directly after a convolution.
#include <tinynet/tinynet.hpp>
using namespace tinynet::nn;
Sequential<Input<1, 8, 8>, Conv2d<4, 3>, Linear<10>> net;
