#pragma once
/// \file
/// softmax / log_softmax kernels over the middle axis of an [outer, n, inner] view,
/// and the nll_loss kernels.

#include <cmath>
#include <cstdint>

#include "tinynet/backend/cpu/parallel.hpp"
#include "tinynet/core/config.hpp"

namespace tinynet::backend::cpu {

/// One row (o, i) of softmax / log_softmax over the middle axis: y = x - max -
/// log(sum(exp(x - max))) (log) or exp(x - max) / sum. Shared with the device kernel.
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

template <typename T>
void softmax_forward(const T* x, T* y, std::int64_t outer, std::int64_t n, std::int64_t inner, bool log) {
  const SoftmaxRowForward<T> row{x, y, n, inner, log};
  parallel_for(outer * inner, std::max<std::int64_t>(1, 4096 / std::max<std::int64_t>(n, 1)),
               [&](std::int64_t lo, std::int64_t hi) {
                 for (std::int64_t j = lo; j < hi; ++j) row(j);
               });
}

template <typename T>
void softmax_backward(const T* y, const T* gy, T* dx, std::int64_t outer, std::int64_t n, std::int64_t inner, bool log,
                      bool accumulate) {
  const SoftmaxRowBackward<T> row{y, gy, dx, n, inner, log, accumulate};
  parallel_for(outer * inner, std::max<std::int64_t>(1, 4096 / std::max<std::int64_t>(n, 1)),
               [&](std::int64_t lo, std::int64_t hi) {
                 for (std::int64_t j = lo; j < hi; ++j) row(j);
               });
}

/// loss[n] = -logp[n, target[n]] (per sample), summed in double.
template <typename T>
void nll_forward(const T* logp, const std::int64_t* target, T* per_sample, std::int64_t batch, std::int64_t classes) {
  for (std::int64_t i = 0; i < batch; ++i) per_sample[i] = -logp[i * classes + target[i]];
}

/// dlogp[n, target[n]] (+)= -scale[n]; all other entries (+)= 0.
template <typename T>
void nll_backward(const std::int64_t* target, const T* gscale, bool scalar_scale, T* dlogp, std::int64_t batch,
                  std::int64_t classes, bool accumulate) {
  if (!accumulate) std::fill(dlogp, dlogp + batch * classes, T(0));
  for (std::int64_t i = 0; i < batch; ++i) dlogp[i * classes + target[i]] -= scalar_scale ? gscale[0] : gscale[i];
}

}  // namespace tinynet::backend::cpu
