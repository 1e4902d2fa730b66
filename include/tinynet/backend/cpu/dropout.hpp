#pragma once
/// \file
/// Dropout kernels. Element (or channel) i is kept when its counter-based uniform draw
/// is >= p, so the mask is the same for any thread count and on the GPU.

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "tinynet/backend/backend.hpp"
#include "tinynet/backend/cpu/kernels_for_isa.hpp"
#include "tinynet/core/parallel.hpp"
#include "tinynet/core/random.hpp"

namespace tinynet::backend::cpu {

/// mask[u] = (draw u >= p) ? 1/(1-p) : 0, for units u in [0, units).
template <typename T>
void dropout_mask(Tag, const RandomStream& rs, T* mask, std::int64_t units, double p) {
  on_isa([&](auto level) { dropout_mask(level, rs, mask, units, p); });
}

/// y[u * inner + i] = x[u * inner + i] * mask[u]: one mask value per `inner` elements
/// (inner = 1 for dropout, H*W for dropout2d). Also the backward, with gy for x. The mask
/// is compute_t<T>: float for bfloat16 elements, so that 1/(1-p) is not rounded to 8 bits.
template <typename T>
void apply_mask(Tag, const T* x, const compute_t<T>* mask, T* y, std::int64_t units, std::int64_t inner,
                bool accumulate) {
  using C = compute_t<T>;
  if constexpr (std::is_same_v<T, bfloat16>) {  // the compiler leaves the rounding loop scalar
    if (inner == 1 && on_isa([&](auto level) {
          if constexpr (decltype(level)::isa >= Isa::avx512) {
            apply_mask(level, x, mask, y, units, accumulate);
            return true;
          }
          return false;
        }))
      return;
  }
  if (inner == 1) {  // one flat loop the compiler vectorises
    parallel_for(units, kElementwiseGrain, [&](std::int64_t lo, std::int64_t hi) {
      if (accumulate)
        for (std::int64_t u = lo; u < hi; ++u) y[u] = T(static_cast<C>(y[u]) + static_cast<C>(x[u]) * mask[u]);
      else
        for (std::int64_t u = lo; u < hi; ++u) y[u] = T(static_cast<C>(x[u]) * mask[u]);
    });
    return;
  }
  parallel_for(units, std::max<std::int64_t>(1, kElementwiseGrain / std::max<std::int64_t>(inner, 1)),
               [&](std::int64_t lo, std::int64_t hi) {
                 for (std::int64_t u = lo; u < hi; ++u) {
                   const C m = mask[u];
                   const T* xs = x + u * inner;
                   T* ys = y + u * inner;
                   for (std::int64_t i = 0; i < inner; ++i)
                     ys[i] = T((accumulate ? static_cast<C>(ys[i]) : C(0)) + static_cast<C>(xs[i]) * m);
                 }
               });
}

}  // namespace tinynet::backend::cpu
