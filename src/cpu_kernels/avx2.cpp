// The avx2 level's kernels for tinynet::cpu_kernels, compiled once; how its sources share
// the work: the library's CMakeLists.txt.
#include "tinynet/backend/cpu/kernels_for_isa.hpp"

#if defined(TINYNET_CPU_X86)
TINYNET_CPU_KERNELS(template, avx2)
TINYNET_CPU_KERNELS_LINEAR_BF16(template, avx2)
#endif
