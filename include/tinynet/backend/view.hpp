#pragma once
/// \file
/// The geometry of the copies behind the ops that move elements without computing: the
/// views that copy (narrow, select, permute, transpose), broadcasting an operand to a
/// shape, cat and index_select. Written once for both backends.

#include <cstdint>

#include "tinynet/core/config.hpp"
#include "tinynet/core/dtype.hpp"
#include "tinynet/core/shape.hpp"

namespace tinynet::backend {

/// A copy between two strided layouts of one shape: for every multi-index c of `extent`,
/// dst[c . dst_stride] (+)= src[c . src_stride]. Strides are in elements; 0 repeats an
/// element (broadcasting), a permuted order transposes.
struct CopyGeometry {
  static constexpr int kMaxRank = Shape::kMaxRank;
  int rank = 0;
  std::int64_t extent[kMaxRank] = {};
  std::int64_t src_stride[kMaxRank] = {};
  std::int64_t dst_stride[kMaxRank] = {};

  TINYNET_HOST_DEVICE std::int64_t numel() const {
    std::int64_t n = 1;
    for (int d = 0; d < rank; ++d) n *= extent[d];
    return n;
  }
  /// The source and destination offsets of flat (row-major) index i.
  TINYNET_HOST_DEVICE void offsets(std::int64_t i, std::int64_t& src, std::int64_t& dst) const {
    src = dst = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const std::int64_t c = i % extent[d];
      i /= extent[d];
      src += c * src_stride[d];
      dst += c * dst_stride[d];
    }
  }
};

/// Row-major strides of `s`, written to `out[0, rank)`.
inline void contiguous_strides(const Shape& s, std::int64_t* out) {
  std::int64_t stride = 1;
  for (int d = s.rank() - 1; d >= 0; --d) {
    out[d] = stride;
    stride *= s[d];
  }
}

/// Element i of a strided copy (T any dtype; accumulating computes in compute_t<T>).
template <typename T>
struct StridedCopy {
  CopyGeometry g;
  const T* src;
  T* dst;
  bool accumulate;
  TINYNET_HOST_DEVICE void operator()(std::int64_t i) const {
    std::int64_t s, d;
    g.offsets(i, s, d);
    apply(s, d);
  }
  /// dst[d] (+)= src[s]
  TINYNET_HOST_DEVICE void apply(std::int64_t s, std::int64_t d) const {
    using C = compute_t<T>;
    dst[d] = accumulate ? T(static_cast<C>(dst[d]) + static_cast<C>(src[s])) : src[s];
  }
};

/// Output j = (o, k, i) of index_select over the middle axis of [outer, n, inner]:
/// y[o,k,i] = x[o, index[k], i], with k < m. An index outside [0, n) sets `*bad` (the
/// kernels check before, or report after).
template <typename T, typename I>
struct IndexSelectRow {
  const T* x;
  const I* index;
  T* y;
  std::int64_t n, inner, m;
  TINYNET_HOST_DEVICE void operator()(std::int64_t j) const {
    const std::int64_t i = j % inner, k = (j / inner) % m, o = j / (inner * m);
    y[j] = x[(o * n + static_cast<std::int64_t>(index[k])) * inner + i];
  }
};

/// Element e = (o, r, i) of index_select's backward: dx[o,r,i] (+)= sum over the k with
/// index[k] == r of gy[o,k,i]. Each dx element sums its own terms: no two threads write
/// one element, whatever the repeats in index.
template <typename T, typename I>
struct IndexSelectBackward {
  const T* gy;
  const I* index;
  T* dx;
  std::int64_t n, inner, m;
  bool accumulate;
  TINYNET_HOST_DEVICE void operator()(std::int64_t e) const {
    using C = compute_t<T>;
    const std::int64_t i = e % inner, r = (e / inner) % n, o = e / (inner * n);
    C acc = accumulate ? static_cast<C>(dx[e]) : C(0);
    for (std::int64_t k = 0; k < m; ++k)
      if (static_cast<std::int64_t>(index[k]) == r) acc += static_cast<C>(gy[(o * m + k) * inner + i]);
    dx[e] = T(acc);
  }
};

}  // namespace tinynet::backend
