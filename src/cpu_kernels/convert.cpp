// tinynet::cpu_kernels: the host's dtype conversions, compiled once (core/detail/convert.hpp).
#define TINYNET_CPU_KERNELS_SOURCE
#include "tinynet/core/detail/convert.hpp"
