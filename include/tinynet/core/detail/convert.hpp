#pragma once
/// \file
/// Element conversions between dtypes on the host: the kernel behind Tensor::to(DType) and
/// copy_ between dtypes. Every pair of dtypes is its own loop (36 of them), so a program
/// that links tinynet::cpu_kernels compiles them there once (core/config.hpp).

#include <cstdint>

#include "tinynet/core/config.hpp"
#include "tinynet/core/dtype.hpp"
#include "tinynet/core/parallel.hpp"

namespace tinynet::detail {

/// dst[i] = src[i] converted from `from` to `to`, i < n, in parallel chunks (autocast
/// converts activations to and from bfloat16 every step). To bfloat16 rounds to nearest,
/// ties to even; from bfloat16 is exact for float32 and float64.
#if defined(TINYNET_COMPILED_ONCE_DECLARED_ONLY)
void convert_elements(DType to, void* dst, DType from, const void* src, std::int64_t n);
#else
TINYNET_COMPILED_ONCE void convert_elements(DType to, void* dst, DType from, const void* src, std::int64_t n) {
  dispatch_all(to, [&]<typename D>() {
    dispatch_all(from, [&]<typename S>() {
      D* d = static_cast<D*>(dst);
      const S* s = static_cast<const S*>(src);
      parallel_for(n, kElementwiseGrain, [&](std::int64_t lo, std::int64_t hi) {
        for (std::int64_t i = lo; i < hi; ++i) d[i] = static_cast<D>(s[i]);
      });
    });
  });
}
#endif

}  // namespace tinynet::detail
