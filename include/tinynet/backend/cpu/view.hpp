#pragma once
/// \file
/// Copy kernels: strided copies (the views that copy, broadcasting, cat) and index_select.

#include <algorithm>
#include <cstdint>

#include "tinynet/backend/backend.hpp"
#include "tinynet/backend/view.hpp"
#include "tinynet/core/error.hpp"
#include "tinynet/core/parallel.hpp"

namespace tinynet::backend::cpu {

/// dst[c . g.dst_stride] (+)= src[c . g.src_stride] for every multi-index c of g.extent;
/// rows of the last dim at a time, a plain copy where both are contiguous along it.
template <typename T>
void strided_copy(Tag, const CopyGeometry& g, const T* src, T* dst, bool accumulate) {
  const std::int64_t n = g.numel();
  if (n == 0) return;
  const std::int64_t inner = g.rank ? g.extent[g.rank - 1] : 1;
  const std::int64_t ss = g.rank ? g.src_stride[g.rank - 1] : 0, ds = g.rank ? g.dst_stride[g.rank - 1] : 0;
  const StridedCopy<T> rule{g, src, dst, accumulate};
  parallel_for(n / inner, std::max<std::int64_t>(1, kElementwiseGrain / inner), [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t r = lo; r < hi; ++r) {
      std::int64_t so, dof;
      g.offsets(r * inner, so, dof);
      if (!accumulate && ss == 1 && ds == 1)
        std::copy(src + so, src + so + inner, dst + dof);
      else
        for (std::int64_t j = 0; j < inner; ++j) rule.apply(so + j * ss, dof + j * ds);
    }
  });
}

/// y[o,k,i] = x[o, index[k], i] over [outer, n, inner], k < m. IndexError naming the first
/// index outside [0, n).
template <typename T, typename I>
void index_select_forward(Tag, const T* x, const I* index, T* y, std::int64_t outer, std::int64_t n, std::int64_t inner,
                          std::int64_t m) {
  for (std::int64_t k = 0; k < m; ++k)
    TINYNET_CHECK(IndexError, index[k] >= 0 && index[k] < n, "index_select: index ", +index[k], " at position ", k,
                  " is out of range for a dimension of size ", n);
  const IndexSelectRow<T, I> rule{x, index, y, n, inner, m};
  parallel_for(outer * m * inner, kElementwiseGrain, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t j = lo; j < hi; ++j) rule(j);
  });
}

/// dx[o,r,i] (+)= sum_{k: index[k] == r} gy[o,k,i]: the backward of index_select.
template <typename T, typename I>
void index_select_backward(Tag, const T* gy, const I* index, T* dx, std::int64_t outer, std::int64_t n,
                           std::int64_t inner, std::int64_t m, bool accumulate) {
  const IndexSelectBackward<T, I> rule{gy, index, dx, n, inner, m, accumulate};
  parallel_for(outer * n * inner, std::max<std::int64_t>(1, kElementwiseGrain / std::max<std::int64_t>(m, 1)),
               [&](std::int64_t lo, std::int64_t hi) {
                 for (std::int64_t e = lo; e < hi; ++e) rule(e);
               });
}

}  // namespace tinynet::backend::cpu
