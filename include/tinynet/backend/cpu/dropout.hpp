#pragma once
/// \file
/// Dropout kernels. Element (or channel) i is kept when its counter-based uniform draw
/// is >= p, so the mask is the same for any thread count and on the GPU.

#include <cstdint>

#include "tinynet/backend/cpu/parallel.hpp"
#include "tinynet/core/random.hpp"

namespace tinynet::backend::cpu {

/// mask[u] = (draw u >= p) ? 1/(1-p) : 0, for units u in [0, units).
template <typename T>
void dropout_mask(const RandomStream& rs, T* mask, std::int64_t units, double p) {
  const T scale = p < 1.0 ? static_cast<T>(1.0 / (1.0 - p)) : T(0);
  // Chunks start at multiples of 4 so that each Philox block (4 draws) is computed once.
  const std::int64_t blocks = (units + 3) / 4;
  parallel_for(blocks, kElementwiseGrain / 4, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t blk = lo; blk < hi; ++blk) {
      std::uint32_t r[4];
      tinynet::detail::Philox4x32::generate(rs.key, rs.base + static_cast<std::uint64_t>(blk), r);
      for (std::int64_t k = 0; k < 4 && blk * 4 + k < units; ++k)
        mask[blk * 4 + k] = tinynet::detail::uint_to_unit<double>(r[k]) >= p ? scale : T(0);
    }
  });
}

/// y[u * inner + i] = x[u * inner + i] * mask[u]: one mask value per `inner` elements
/// (inner = 1 for dropout, H*W for dropout2d). Also the backward, with gy for x.
template <typename T>
void apply_mask(const T* x, const T* mask, T* y, std::int64_t units, std::int64_t inner, bool accumulate) {
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
