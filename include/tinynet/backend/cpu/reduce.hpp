#pragma once
/// \file
/// Reduction kernels over the middle axis of an [outer, n, inner] view.

#include <algorithm>
#include <cstdint>

#include "tinynet/backend/backend.hpp"
#include "tinynet/backend/reduce.hpp"
#include "tinynet/core/parallel.hpp"

namespace tinynet::backend::cpu {

/// y[o,i] = scale * sum_k x[o,k,i]; U is T, or int64 for int32, int64 and bool x (counts).
template <typename T, typename U>
void sum_dim(Tag, const T* x, U* y, std::int64_t outer, std::int64_t n, std::int64_t inner, U scale) {
  const SumDimRow<T, U> row{x, y, n, inner, scale};
  parallel_for(outer * inner, std::max<std::int64_t>(1, kElementwiseGrain / std::max<std::int64_t>(n, 1)),
               [&](std::int64_t lo, std::int64_t hi) {
                 for (std::int64_t j = lo; j < hi; ++j) row(j);
               });
}

/// dx[o,k,i] (+)= scale * gy[o,i]: the backward of sum_dim.
template <typename T>
void broadcast_dim(Tag, const T* gy, T* dx, std::int64_t outer, std::int64_t n, std::int64_t inner, T scale,
                   bool accumulate) {
  parallel_for(outer * n, std::max<std::int64_t>(1, kElementwiseGrain / std::max<std::int64_t>(inner, 1)),
               [&](std::int64_t lo, std::int64_t hi) {
                 for (std::int64_t r = lo; r < hi; ++r) {
                   const T* g = gy + (r / n) * inner;
                   T* d = dx + r * inner;
                   for (std::int64_t i = 0; i < inner; ++i) d[i] = (accumulate ? d[i] : T(0)) + scale * g[i];
                 }
               });
}

namespace detail {
inline std::int64_t row_grain(std::int64_t n) {
  return std::max<std::int64_t>(1, kElementwiseGrain / std::max<std::int64_t>(n, 1));
}
}  // namespace detail

/// y[o,i] = max_k x[o,k,i] (min for Extremum::min; NaN if any is).
template <typename T>
void extremum_dim(Tag, const T* x, T* y, std::int64_t outer, std::int64_t n, std::int64_t inner, Extremum e) {
  const ExtremumRow<T> row{x, y, nullptr, n, inner, e};
  parallel_for(outer * inner, detail::row_grain(n), [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t j = lo; j < hi; ++j) row(j);
  });
}

/// index[o,i] = the first k at which x[o,k,i] is the extremum (a NaN's, if any).
template <typename T>
void arg_extremum_dim(Tag, const T* x, std::int64_t* index, std::int64_t outer, std::int64_t n, std::int64_t inner,
                      Extremum e) {
  const ExtremumRow<T> row{x, nullptr, index, n, inner, e};
  parallel_for(outer * inner, detail::row_grain(n), [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t j = lo; j < hi; ++j) row(j);
  });
}

/// dx[o,k,i] (+)= gy[o,i] / ties where x[o,k,i] == y[o,i], else 0: extremum_dim's backward.
template <typename T>
void extremum_dim_backward(Tag, const T* x, const T* y, const T* gy, T* dx, std::int64_t outer, std::int64_t n,
                           std::int64_t inner, bool accumulate) {
  const ExtremumBackwardRow<T> row{x, y, gy, dx, n, inner, accumulate};
  parallel_for(outer * inner, detail::row_grain(n), [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t j = lo; j < hi; ++j) row(j);
  });
}

}  // namespace tinynet::backend::cpu
