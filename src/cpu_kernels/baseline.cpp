// tinynet::cpu_kernels: the baseline level's kernels, compiled once (backend/cpu/kernels_for_isa.hpp).
// The conversions the kernels call are convert.cpp's, declared only here (CMake defines
// TINYNET_CPU_KERNELS_COMPILED for the library's sources too: core/config.hpp),
// and the other levels' kernels the other sources' (extern templates).
#include "tinynet/backend/cpu/kernels_for_isa.hpp"

TINYNET_CPU_KERNELS(template, baseline)
