#pragma once
/// \file
/// softmax / log_softmax over the middle axis of an [outer, n, inner] view: the per-row
/// rules both backends run (one row per index).

#include <cmath>
#include <cstdint>

#include "tinynet/core/config.hpp"

namespace tinynet::backend {

/// One row (o, i) of softmax / log_softmax over the middle axis: y = x - max -
/// log(sum(exp(x - max))) (log) or exp(x - max) / sum.
template <typename T>
struct SoftmaxRowForward {
  const T* x;
  T* y;
  std::int64_t n, inner;
  bool log;
  TINYNET_HOST_DEVICE void operator()(std::int64_t j) const {
    const std::int64_t base = (j / inner) * n * inner + j % inner;
    T mx = x[base];
    for (std::int64_t k = 1; k < n; ++k) mx = x[base + k * inner] > mx ? x[base + k * inner] : mx;
    T sum = 0;
    for (std::int64_t k = 0; k < n; ++k) sum += std::exp(x[base + k * inner] - mx);
    if (log) {
      const T lse = mx + std::log(sum);
      for (std::int64_t k = 0; k < n; ++k) y[base + k * inner] = x[base + k * inner] - lse;
    } else {
      const T inv = T(1) / sum;
      for (std::int64_t k = 0; k < n; ++k) y[base + k * inner] = std::exp(x[base + k * inner] - mx) * inv;
    }
  }
};

/// One row of the backward: log: dx = gy - exp(y) sum(gy);  softmax: dx = y (gy - sum(gy y)).
template <typename T>
struct SoftmaxRowBackward {
  const T* y;
  const T* gy;
  T* dx;
  std::int64_t n, inner;
  bool log, accumulate;
  TINYNET_HOST_DEVICE void operator()(std::int64_t j) const {
    const std::int64_t base = (j / inner) * n * inner + j % inner;
    T s = 0;
    for (std::int64_t k = 0; k < n; ++k) s += log ? gy[base + k * inner] : gy[base + k * inner] * y[base + k * inner];
    for (std::int64_t k = 0; k < n; ++k) {
      const std::int64_t e = base + k * inner;
      const T d = log ? gy[e] - std::exp(y[e]) * s : y[e] * (gy[e] - s);
      dx[e] = accumulate ? dx[e] + d : d;
    }
  }
};

}  // namespace tinynet::backend
