// A residual body that changes the sample's shape needs a projection shortcut.
#include <tinynet/tinynet.hpp>

using namespace tinynet::nn;
using Net = Sequential<Input<16, 8, 8>, Residual<Conv2d<32, 3, 2, 1>, ReLU>>;
Net net;
