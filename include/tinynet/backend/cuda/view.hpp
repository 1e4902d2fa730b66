#pragma once
/// \file
/// Copy device kernels, mirroring backend/cpu/view.hpp: strided copies and index_select,
/// one device thread per output element running the rules of backend/view.hpp.

#include "tinynet/core/config.hpp"

#if defined(TINYNET_WITH_CUDA)

#include <cstdint>

#include "tinynet/backend/backend.hpp"
#include "tinynet/backend/cuda/detail/launch.hpp"
#include "tinynet/backend/view.hpp"
#include "tinynet/core/cuda/runtime.hpp"

namespace tinynet::backend::cuda {

namespace detail {

/// IndexSelectRow that raises the device error flag (and writes 0) for an index outside
/// [0, n), reported by the next synchronisation: reading the indices on the host first
/// would stall the stream.
template <typename T, typename I>
struct CheckedIndexSelectRow {
  IndexSelectRow<T, I> rule;
  int* error;
  TINYNET_HOST_DEVICE void operator()(std::int64_t j) const {
    const I k = rule.index[(j / rule.inner) % rule.m];
    if (k < 0 || k >= rule.n) {
      tinynet::cuda::raise_device_error(error, tinynet::cuda::detail::kIndexOutOfRange);
      rule.y[j] = T(0);
      return;
    }
    rule(j);
  }
};

}  // namespace detail

/// dst[c . g.dst_stride] (+)= src[c . g.src_stride] for every multi-index c of g.extent.
template <typename T>
void strided_copy(Tag, const CopyGeometry& g, const T* src, T* dst, bool accumulate) {
  for_each_index(g.numel(), StridedCopy<T>{g, src, dst, accumulate});
}

/// y[o,k,i] = x[o, index[k], i]; an index outside [0, n) is reported at the next
/// synchronisation (an IndexError).
template <typename T, typename I>
void index_select_forward(Tag, const T* x, const I* index, T* y, std::int64_t outer, std::int64_t n, std::int64_t inner,
                          std::int64_t m) {
  for_each_index(outer * m * inner, detail::CheckedIndexSelectRow<T, I>{IndexSelectRow<T, I>{x, index, y, n, inner, m},
                                                                        tinynet::cuda::detail::error_word()});
}

/// dx[o,r,i] (+)= sum_{k: index[k] == r} gy[o,k,i]
template <typename T, typename I>
void index_select_backward(Tag, const T* gy, const I* index, T* dx, std::int64_t outer, std::int64_t n,
                           std::int64_t inner, std::int64_t m, bool accumulate) {
  for_each_index(outer * n * inner, IndexSelectBackward<T, I>{gy, index, dx, n, inner, m, accumulate});
}

}  // namespace tinynet::backend::cuda

#endif  // TINYNET_WITH_CUDA
