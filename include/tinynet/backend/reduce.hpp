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

/// Output j = (o, i) of argmax_dim: the first k with the largest x[o,k,i].
template <typename T>
struct ArgmaxRow {
  const T* x;
  std::int64_t* y;
  std::int64_t n, inner;
  TINYNET_HOST_DEVICE void operator()(std::int64_t j) const {
    const T* p = x + (j / inner) * n * inner + j % inner;
    std::int64_t best = 0;
    for (std::int64_t k = 1; k < n; ++k)
      if (p[k * inner] > p[best * inner]) best = k;
    y[j] = best;
  }
};

}  // namespace tinynet::backend
