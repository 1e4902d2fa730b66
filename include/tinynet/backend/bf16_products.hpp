#pragma once
/// \file
/// Whether a device type's backend multiplies autocast's bfloat16 operands natively, or
/// rounds them in its float32 kernels (the same products). autocast says so once when it is
/// turned on for a device that rounds them.

#include "tinynet/backend/cpu/isa.hpp"
#include "tinynet/core/device.hpp"

namespace tinynet::backend {

/// The CPU: with AVX512-BF16 (`vdpbf16ps`, and AMX tiles above it) at the level in use; CUDA: cuBLAS's bfloat16 GEMMs.
inline bool native_bf16_products(DeviceType device) {
  if (device == DeviceType::cuda) return true;
#if defined(TINYNET_CPU_X86)
  return cpu::isa() >= cpu::Isa::avx512_bf16;
#else
  return false;
#endif
}

}  // namespace tinynet::backend
