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
  parallel_for(units, kElementwiseGrain, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t u = lo; u < hi; ++u)
      mask[u] = rs.uniform<double>(static_cast<std::uint64_t>(u)) >= p ? scale : T(0);
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
