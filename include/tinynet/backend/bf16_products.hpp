#pragma once
/// \file
/// Whether a device type's backend multiplies autocast's bfloat16 operands natively, or
/// rounds them in its float32 kernels (the same products). autocast says so once when it is
/// turned on for a device that rounds them.

#include <string>

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

/// Where `device` rounds the products in its float32 kernels, the line that says so and why
/// (the CPU lacks AVX512-BF16, or the level chosen or capped leaves it unused); else empty.
inline std::string bf16_products_notice(DeviceType device) {
  if (native_bf16_products(device)) return {};
  if (cpu::detected_isa() >= cpu::Isa::avx512_bf16)
    return std::string("tinynet: autocast bfloat16 at CPU level ") + cpu::isa_name(cpu::isa()) +
           ": products multiply bfloat16-rounded operands in the float32 kernels, not on vdpbf16ps";
  return "tinynet: autocast bfloat16 on a CPU without AVX512-BF16: products multiply bfloat16-rounded operands in "
         "the float32 kernels";
}

}  // namespace tinynet::backend
