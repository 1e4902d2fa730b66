// Must not compile: no Input<...> first.
#include <tinynet/tinynet.hpp>
using namespace tinynet::nn;
Sequential<Linear<3>> net;
