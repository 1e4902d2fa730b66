#pragma once
/// \file
/// Dropout kernels. Element (or channel) i is kept when its counter-based uniform draw
/// is >= p, so the mask is the same for any thread count and on the GPU.

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "tinynet/backend/backend.hpp"
#include "tinynet/backend/cpu/detail/philox_avx512.hpp"
#include "tinynet/core/config.hpp"
#include "tinynet/core/parallel.hpp"
#include "tinynet/core/random.hpp"

namespace tinynet::backend::cpu {

/// Draw r keeps its unit when r * 2^-32 >= p (the comparison the device kernel makes in
/// double), that is when r >= ceil(p * 2^32): one integer comparison per draw.
inline std::uint64_t keep_threshold(double p) { return static_cast<std::uint64_t>(std::ceil(p * 4294967296.0)); }

/// mask[u] = (draw u >= p) ? 1/(1-p) : 0, for units u in [0, units).
template <typename T>
void dropout_mask(Tag, const RandomStream& rs, T* mask, std::int64_t units, double p) {
  const T scale = p < 1.0 ? static_cast<T>(1.0 / (1.0 - p)) : T(0);
  const std::uint64_t threshold = keep_threshold(p);
  // Chunks start at multiples of 4 so that each Philox block (4 draws) is computed once.
  const std::int64_t full = units / 4;
  parallel_for(full, kElementwiseGrain / 4, [&](std::int64_t lo, std::int64_t hi) {
    std::int64_t blk = lo;
#if defined(TINYNET_CPU_AVX512)
    if constexpr (sizeof(T) == 4) {
      if (threshold <= 0xFFFFFFFFu) {
        const __m512i thr = _mm512_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(threshold)));
        const __m512 keep = _mm512_set1_ps(scale), drop = _mm512_setzero_ps();
        for (; blk + 16 <= hi; blk += 16) {
          __m512i draws[4], ordered[4];
          philox4x32_x16(rs.key, rs.base + static_cast<std::uint64_t>(blk), draws);
          philox_counter_major(draws, ordered);
          for (int j = 0; j < 4; ++j)
            _mm512_storeu_ps(mask + blk * 4 + 16 * j,
                             _mm512_mask_blend_ps(_mm512_cmpge_epu32_mask(ordered[j], thr), drop, keep));
        }
      }
    }
#endif
    for (; blk < hi; ++blk) {
      std::uint32_t r[4];
      tinynet::detail::Philox4x32::generate(rs.key, rs.base + static_cast<std::uint64_t>(blk), r);
      for (int k = 0; k < 4; ++k) mask[blk * 4 + k] = r[k] >= threshold ? scale : T(0);
    }
  });
  if (full * 4 < units) {
    std::uint32_t r[4];
    tinynet::detail::Philox4x32::generate(rs.key, rs.base + static_cast<std::uint64_t>(full), r);
    for (std::int64_t u = full * 4; u < units; ++u) mask[u] = r[u - full * 4] >= threshold ? scale : T(0);
  }
}

/// y[u * inner + i] = x[u * inner + i] * mask[u]: one mask value per `inner` elements
/// (inner = 1 for dropout, H*W for dropout2d). Also the backward, with gy for x.
template <typename T>
void apply_mask(Tag, const T* x, const T* mask, T* y, std::int64_t units, std::int64_t inner, bool accumulate) {
  if (inner == 1) {  // one flat loop the compiler vectorises
    parallel_for(units, kElementwiseGrain, [&](std::int64_t lo, std::int64_t hi) {
      if (accumulate)
        for (std::int64_t u = lo; u < hi; ++u) y[u] += x[u] * mask[u];
      else
        for (std::int64_t u = lo; u < hi; ++u) y[u] = x[u] * mask[u];
    });
    return;
  }
  parallel_for(units, std::max<std::int64_t>(1, kElementwiseGrain / std::max<std::int64_t>(inner, 1)),
               [&](std::int64_t lo, std::int64_t hi) {
                 for (std::int64_t u = lo; u < hi; ++u) {
                   const T m = mask[u];
                   const T* xs = x + u * inner;
                   T* ys = y + u * inner;
                   for (std::int64_t i = 0; i < inner; ++i) ys[i] = (accumulate ? ys[i] : T(0)) + xs[i] * m;
                 }
               });
}

}  // namespace tinynet::backend::cpu
