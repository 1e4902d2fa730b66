#pragma once
/// \file
/// Dropout device kernels, mirroring backend/cpu/dropout.hpp: the same counter-based
/// Philox draws, so a seed gives the same mask on the CPU and the device.

#include "tinynet/core/config.hpp"

#if defined(TINYNET_WITH_CUDA)

#include <cstdint>

#include "tinynet/backend/backend.hpp"
#include "tinynet/backend/cuda/detail/launch.hpp"
#include "tinynet/core/random.hpp"

namespace tinynet::backend::cuda {

namespace detail {

template <typename T>
struct DropoutMask {  // one Philox block (4 draws) per index
  std::uint64_t key, base;
  T* mask;
  std::int64_t units;
  double p;
  T scale;
  TINYNET_HOST_DEVICE void operator()(std::int64_t blk) const {
    std::uint32_t r[4];
    tinynet::detail::Philox4x32::generate(key, base + static_cast<std::uint64_t>(blk), r);
    for (std::int64_t k = 0; k < 4 && blk * 4 + k < units; ++k)
      mask[blk * 4 + k] = tinynet::detail::uint_to_unit<double>(r[k]) >= p ? scale : T(0);
  }
};

template <typename T>
struct ApplyMask {
  const T* x;
  const compute_t<T>* mask;
  T* y;
  std::int64_t inner;
  bool accumulate;
  TINYNET_HOST_DEVICE void operator()(std::int64_t e) const {
    using C = compute_t<T>;
    const C v = static_cast<C>(x[e]) * mask[e / inner];
    y[e] = T(accumulate ? static_cast<C>(y[e]) + v : v);
  }
};

}  // namespace detail

/// mask[u] = (draw u >= p) ? 1/(1-p) : 0
template <typename T>
void dropout_mask(Tag, const RandomStream& rs, T* mask, std::int64_t units, double p) {
  const T scale = p < 1.0 ? static_cast<T>(1.0 / (1.0 - p)) : T(0);
  for_each_index((units + 3) / 4, detail::DropoutMask<T>{rs.key, rs.base, mask, units, p, scale});
}

/// y[u * inner + i] (+)= x[u * inner + i] * mask[u] (the mask in compute_t<T>)
template <typename T>
void apply_mask(Tag, const T* x, const compute_t<T>* mask, T* y, std::int64_t units, std::int64_t inner,
                bool accumulate) {
  for_each_index(units * inner, detail::ApplyMask<T>{x, mask, y, inner, accumulate});
}

}  // namespace tinynet::backend::cuda

#endif  // TINYNET_WITH_CUDA
