// Must not compile: int is not a layer.
#include <tinynet/tinynet.hpp>
using namespace tinynet::nn;
Sequential<Input<4>, int> net;
