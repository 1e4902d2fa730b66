// tinynet::cpu_kernels: the baseline level's kernels, compiled once (backend/cpu/kernels_for_isa.hpp).
#include "tinynet/backend/cpu/kernels_for_isa.hpp"

TINYNET_CPU_KERNELS(template, baseline)
