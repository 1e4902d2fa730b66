// tinynet::cpu_kernels: the amx level's kernels, compiled once (backend/cpu/kernels_for_isa.hpp).
// The conversions the kernels call are convert.cpp's, declared only here (core/config.hpp),
// and the other levels' kernels the other sources' (extern templates).
#if !defined(TINYNET_CPU_KERNELS_COMPILED)
#define TINYNET_CPU_KERNELS_COMPILED
#endif
#include "tinynet/backend/cpu/kernels_for_isa.hpp"

#if defined(TINYNET_CPU_X86)
TINYNET_CPU_KERNELS(template, amx)
TINYNET_CPU_KERNELS_AVX512(template, amx)
TINYNET_CPU_KERNELS_LINEAR_BF16(template, amx)
#endif
