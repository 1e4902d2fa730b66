#pragma once
/// \file
/// Reductions over the middle axis of an [outer, n, inner] view: one output per index,
/// the rules both backends run.

#include <cstdint>
#include <type_traits>

#include "tinynet/core/config.hpp"

namespace tinynet::backend {

/// Output j = (o, i) of sum_dim: scale * sum_k x[o,k,i], summed in double for float
/// inputs' accuracy, or in int64 (U = int64: the sums that count int32, int64 and bool).
template <typename T, typename U>
struct SumDimRow {
  const T* x;
  U* y;
  std::int64_t n, inner;
  U scale;
  TINYNET_HOST_DEVICE void operator()(std::int64_t j) const {
    using Acc = std::conditional_t<std::is_integral_v<U>, std::int64_t, double>;
    const T* p = x + (j / inner) * n * inner + j % inner;
    Acc acc = 0;
    for (std::int64_t k = 0; k < n; ++k) acc += static_cast<Acc>(p[k * inner]);
    y[j] = static_cast<U>(acc) * scale;
  }
};

/// Which extremum amax/amin and argmax/argmin look for.
enum class Extremum { max, min };

/// Whether a beats b: larger (smaller for min); NaN beats every number, as in PyTorch.
template <typename T>
TINYNET_HOST_DEVICE bool beats(Extremum e, T a, T b) {
  if (a != a) return b == b;
  return e == Extremum::max ? b < a : a < b;
}

/// Output j = (o, i) of the extremum kernels: the first k whose x[o,k,i] beats the others.
template <typename T>
TINYNET_HOST_DEVICE std::int64_t extremum_at(const T* p, std::int64_t n, std::int64_t inner, Extremum e) {
  std::int64_t best = 0;
  for (std::int64_t k = 1; k < n; ++k)
    if (beats(e, p[k * inner], p[best * inner])) best = k;
  return best;
}

/// Output j = (o, i) of extremum_dim (y = its value) or of arg_extremum_dim (index = its k).
template <typename T>
struct ExtremumRow {
  const T* x;
  T* y;                 // null for arg_extremum_dim
  std::int64_t* index;  // null for extremum_dim
  std::int64_t n, inner;
  Extremum e;
  TINYNET_HOST_DEVICE void operator()(std::int64_t j) const {
    const T* p = x + (j / inner) * n * inner + j % inner;
    const std::int64_t k = extremum_at(p, n, inner, e);
    if (y) y[j] = p[k * inner];
    if (index) index[j] = k;
  }
};

/// Output j = (o, i) of extremum_dim's backward: dx[o,k,i] (+)= gy[o,i] / t for the t
/// entries equal to y[o,i] (the gradient shared evenly among ties, as PyTorch's amax), 0
/// for the others.
template <typename T>
struct ExtremumBackwardRow {
  const T* x;
  const T* y;
  const T* gy;
  T* dx;
  std::int64_t n, inner;
  bool accumulate;
  TINYNET_HOST_DEVICE void operator()(std::int64_t j) const {
    const std::int64_t base = (j / inner) * n * inner + j % inner;
    std::int64_t ties = 0;
    for (std::int64_t k = 0; k < n; ++k) ties += x[base + k * inner] == y[j];
    const T share = ties ? gy[j] / static_cast<T>(ties) : T(0);
    for (std::int64_t k = 0; k < n; ++k) {
      const std::int64_t at = base + k * inner;
      const T v = x[at] == y[j] ? share : T(0);
      dx[at] = accumulate ? dx[at] + v : v;
    }
  }
};

}  // namespace tinynet::backend
