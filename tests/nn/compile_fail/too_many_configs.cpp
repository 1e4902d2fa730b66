// Must not compile: two Dropout arguments for one Dropout layer.
#include <tinynet/tinynet.hpp>
using namespace tinynet::nn;
Sequential<Input<4>, Dropout, Linear<2>> net(Dropout(0.1), Dropout(0.2));
