#pragma once
/// \file
/// Element conversions between dtypes on the host: the kernel behind Tensor::to(DType) and
/// copy_ between dtypes. Every pair of dtypes is its own loop (36 of them), so a program
/// that links tinynet::cpu_kernels compiles them there once (core/config.hpp).

#include <cstdint>
#include <type_traits>

#include "tinynet/core/bfloat16.hpp"
#include "tinynet/core/config.hpp"
#include "tinynet/core/dtype.hpp"
#include "tinynet/core/parallel.hpp"

namespace tinynet::detail {

/// dst[i] = src[i] converted from `from` to `to`, i < n, in parallel chunks (autocast
/// converts activations to and from bfloat16 every step). To bfloat16 rounds to nearest,
/// ties to even; from bfloat16 is exact for float32 and float64.
#if defined(TINYNET_COMPILED_ONCE_DECLARED_ONLY)
void convert_elements(DType to, void* dst, DType from, const void* src, std::int64_t n);
/// The runs between float32 and bfloat16 that convert_elements splits its work into.
void float_to_bf16_run(const float* src, bfloat16* dst, std::int64_t n);
void bf16_to_float_run(const bfloat16* src, float* dst, std::int64_t n);
#else

/// The conversions between float32 and bfloat16 (autocast's casts) compiled for AVX-512
/// (x86-64-v4) and AVX2 (x86-64-v3) as well as for the program's flags, the one for the CPU
/// chosen as the program loads (GCC's target_clones; glibc's ifunc): a default-flags build
/// converts 3x faster on such CPUs. Every version gives the same bits, so TINYNET_CPU_ISA
/// does not cap them. GCC itself only: Clang 14 defines a header function's chooser in every
/// file that uses it (a duplicate symbol at link time), and other compilers that define
/// __GNUC__ may not take the attribute; under ThreadSanitizer the chooser, instrumented, runs
/// before the sanitizer's runtime is up and crashes the program as it loads. There, the
/// plain loops.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__INTEL_COMPILER) &&           \
    !defined(__INTEL_LLVM_COMPILER) && !defined(__NVCOMPILER) && !defined(__CUDACC__) && defined(__GLIBC__) && \
    !defined(__SANITIZE_THREAD__)
#define TINYNET_CONVERT_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TINYNET_CONVERT_CLONES
#endif

TINYNET_CONVERT_CLONES TINYNET_COMPILED_ONCE void float_to_bf16_run(const float* src, bfloat16* dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) dst[i].bits = float_to_bf16_bits(src[i]);
}

TINYNET_CONVERT_CLONES TINYNET_COMPILED_ONCE void bf16_to_float_run(const bfloat16* src, float* dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) dst[i] = bf16_bits_to_float(src[i].bits);
}

TINYNET_COMPILED_ONCE void convert_elements(DType to, void* dst, DType from, const void* src, std::int64_t n) {
  dispatch_all(to, [&]<typename D>() {
    dispatch_all(from, [&]<typename S>() {
      D* d = static_cast<D*>(dst);
      const S* s = static_cast<const S*>(src);
      if constexpr (std::is_same_v<D, bfloat16> && std::is_same_v<S, float>) {
        parallel_for(n, kElementwiseGrain,
                     [&](std::int64_t lo, std::int64_t hi) { float_to_bf16_run(s + lo, d + lo, hi - lo); });
      } else if constexpr (std::is_same_v<D, float> && std::is_same_v<S, bfloat16>) {
        parallel_for(n, kElementwiseGrain,
                     [&](std::int64_t lo, std::int64_t hi) { bf16_to_float_run(s + lo, d + lo, hi - lo); });
      } else {
        parallel_for(n, kElementwiseGrain, [&](std::int64_t lo, std::int64_t hi) {
          for (std::int64_t i = lo; i < hi; ++i) d[i] = static_cast<D>(s[i]);
        });
      }
    });
  });
}
#undef TINYNET_CONVERT_CLONES
#endif

}  // namespace tinynet::detail
