// Must not compile: a 3x3 kernel with dilation 3 spans 7x7, over a padded 6x6 input.
#include <tinynet/tinynet.hpp>
using namespace tinynet::nn;
Sequential<Input<2, 4, 4>, Conv2d<4, 3, 1, 1, dilation<3>>> net;
