// The baseline level's kernels for tinynet::cpu_kernels, compiled once; how its sources share
// the work: the library's CMakeLists.txt.
#include "tinynet/backend/cpu/kernels_for_isa.hpp"

TINYNET_CPU_KERNELS(template, baseline)
