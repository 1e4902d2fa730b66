// Must not compile: 6 input channels in 4 groups.
#include <tinynet/tinynet.hpp>
using namespace tinynet::nn;
Sequential<Input<3, 8, 8>, Conv2d<6, 3, 1, 1>, Conv2d<8, 3, 1, 1, groups<4>>> net;
