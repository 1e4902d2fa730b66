#pragma once
/// \file
/// Reduction kernels over the middle axis of an [outer, n, inner] view.

#include <cstdint>

#include "tinynet/backend/cpu/parallel.hpp"

namespace tinynet::backend::cpu {

/// y[o,i] = scale * sum_k x[o,k,i], summed in double for float inputs' accuracy.
template <typename T>
void sum_dim(const T* x, T* y, std::int64_t outer, std::int64_t n, std::int64_t inner, T scale) {
  parallel_for(outer * inner, std::max<std::int64_t>(1, kElementwiseGrain / std::max<std::int64_t>(n, 1)),
               [&](std::int64_t lo, std::int64_t hi) {
                 for (std::int64_t j = lo; j < hi; ++j) {
                   const std::int64_t o = j / inner, i = j % inner;
                   const T* p = x + o * n * inner + i;
                   double acc = 0;
                   for (std::int64_t k = 0; k < n; ++k) acc += static_cast<double>(p[k * inner]);
                   y[j] = static_cast<T>(acc) * scale;
                 }
               });
}

/// dx[o,k,i] (+)= scale * gy[o,i]: the backward of sum_dim.
template <typename T>
void broadcast_dim(const T* gy, T* dx, std::int64_t outer, std::int64_t n, std::int64_t inner, T scale,
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

/// y[o,i] = argmax_k x[o,k,i] (first maximum on ties).
template <typename T>
void argmax_dim(const T* x, std::int64_t* y, std::int64_t outer, std::int64_t n, std::int64_t inner) {
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      const T* p = x + o * n * inner + i;
      std::int64_t best = 0;
      for (std::int64_t k = 1; k < n; ++k)
        if (p[k * inner] > p[best * inner]) best = k;
      y[o * inner + i] = best;
    }
}

}  // namespace tinynet::backend::cpu
