#pragma once
/// \file
/// batch_norm device kernels (statistics per channel), mirroring backend/cpu/batch_norm.hpp.

#include "tinynet/core/config.hpp"

#if defined(TINYNET_WITH_CUDA)

#include <cmath>
#include <cstdint>

#include "tinynet/backend/backend.hpp"
#include "tinynet/backend/batch_norm.hpp"
#include "tinynet/backend/cuda/detail/launch.hpp"

namespace tinynet::backend::cuda {

namespace detail {

// Channel c: the batch mean and biased variance, summed in double.
template <typename T>
struct BatchNormStats {
  BatchNormGeometry g;
  const T* x;
  T* mean;
  T* var;
  TINYNET_HOST_DEVICE void operator()(std::int64_t c) const {
    double s = 0, s2 = 0;
    for (std::int64_t i = 0; i < g.n; ++i)
      for (std::int64_t j = 0; j < g.hw; ++j) s += static_cast<double>(x[(i * g.c + c) * g.hw + j]);
    const double m = s / static_cast<double>(g.n * g.hw);
    for (std::int64_t i = 0; i < g.n; ++i)
      for (std::int64_t j = 0; j < g.hw; ++j) {
        const T v = x[(i * g.c + c) * g.hw + j];
        s2 += (v - m) * (v - m);
      }
    mean[c] = static_cast<T>(m);
    var[c] = static_cast<T>(s2 / static_cast<double>(g.n * g.hw));
  }
};

template <typename T>
struct BatchNormApply {
  BatchNormGeometry g;
  const T* x;
  const T* mean;
  const T* invstd;
  const T* w;
  const T* b;
  T* y;
  TINYNET_HOST_DEVICE void operator()(std::int64_t e) const {
    const std::int64_t c = (e / g.hw) % g.c;
    const T scale = invstd[c] * (w ? w[c] : T(1)), shift = (b ? b[c] : T(0)) - mean[c] * scale;
    y[e] = x[e] * scale + shift;
  }
};

template <typename T>
struct BatchNormGradSums {  // per channel: sum(dy), sum(dy xhat) into sums[2c], sums[2c+1] (double)
  BatchNormGeometry g;
  const T* x;
  const T* gy;
  const T* mean;
  const T* invstd;
  double* sums;
  T* dw;
  bool acc_dw;
  T* db;
  bool acc_db;
  TINYNET_HOST_DEVICE void operator()(std::int64_t c) const {
    double sum_dy = 0, sum_dy_xhat = 0;
    for (std::int64_t i = 0; i < g.n; ++i)
      for (std::int64_t j = 0; j < g.hw; ++j) {
        const std::int64_t e = (i * g.c + c) * g.hw + j;
        sum_dy += gy[e];
        sum_dy_xhat += gy[e] * (x[e] - mean[c]) * invstd[c];
      }
    sums[2 * c] = sum_dy;
    sums[2 * c + 1] = sum_dy_xhat;
    if (dw) dw[c] = (acc_dw ? dw[c] : T(0)) + static_cast<T>(sum_dy_xhat);
    if (db) db[c] = (acc_db ? db[c] : T(0)) + static_cast<T>(sum_dy);
  }
};

template <typename T>
struct BatchNormInputGrad {
  BatchNormGeometry g;
  const T* x;
  const T* gy;
  const T* mean;
  const T* invstd;
  const T* w;
  const double* sums;
  bool training;
  T* dx;
  bool accumulate;
  TINYNET_HOST_DEVICE void operator()(std::int64_t e) const {
    const std::int64_t c = (e / g.hw) % g.c;
    const double m = static_cast<double>(g.n * g.hw);
    const T k = invstd[c] * (w ? w[c] : T(1));
    T d = gy[e];
    if (training) {
      const T xhat = (x[e] - mean[c]) * invstd[c];
      d = static_cast<T>(d - sums[2 * c] / m - xhat * sums[2 * c + 1] / m);
    }
    dx[e] = (accumulate ? dx[e] : T(0)) + k * d;
  }
};

}  // namespace detail

/// Training statistics: mean, invstd, and the running statistics updated (either may be null).
template <typename T>
void batch_norm_train_stats(Tag, const BatchNormGeometry& g, const T* x, T* mean, T* var, T* invstd, T* running_mean,
                            T* running_var, double momentum, double eps) {
  for_each_index(g.c, detail::BatchNormStats<T>{g, x, mean, var});
  const double unbias = static_cast<double>(g.count()) / static_cast<double>(g.count() - 1);
  for_each_index(g.c, BatchNormFinalize<T>{mean, var, invstd, running_mean, running_var, momentum, eps, unbias});
}

/// Evaluation statistics from the running ones.
template <typename T>
void batch_norm_eval_stats(Tag, const BatchNormGeometry& g, const T* running_mean, const T* running_var, T* mean,
                           T* invstd, double eps) {
  for_each_index(g.c, BatchNormRunning<T>{running_mean, running_var, mean, invstd, eps});
}

/// y = (x - mean[c]) * invstd[c] * w[c] + b[c]   (w, b may be null)
template <typename T>
void batch_norm_apply(Tag, const BatchNormGeometry& g, const T* x, const T* mean, const T* invstd, const T* w,
                      const T* b, T* y) {
  for_each_index(g.n * g.c * g.hw, detail::BatchNormApply<T>{g, x, mean, invstd, w, b, y});
}

/// Gradients of batch_norm (see the CPU kernel for the formulas). `sums` is device scratch
/// of 2 * C doubles. Any of dx, dw, db may be null.
template <typename T>
void batch_norm_backward(Tag, const BatchNormGeometry& g, const T* x, const T* mean, const T* invstd, const T* w,
                         const T* gy, bool training, T* dx, bool acc_dx, T* dw, bool acc_dw, T* db, bool acc_db,
                         double* sums) {
  for_each_index(g.c, detail::BatchNormGradSums<T>{g, x, gy, mean, invstd, sums, dw, acc_dw, db, acc_db});
  if (dx)
    for_each_index(g.n * g.c * g.hw,
                   detail::BatchNormInputGrad<T>{g, x, gy, mean, invstd, w, sums, training, dx, acc_dx});
}

}  // namespace tinynet::backend::cuda

#endif  // TINYNET_WITH_CUDA
