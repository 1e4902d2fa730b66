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
#include "tinynet/backend/cuda/detail/scratch.hpp"

namespace tinynet::backend::cuda {

namespace detail {

// The per-channel sums, without atomics and in a fixed order: kParts threads per channel
// each add a strided share of the channel's n * hw values (neighbouring threads read
// neighbouring values), then one thread per channel adds its kParts partial sums in order.
// (One thread per channel over all its values left a 16-channel layer 16 threads.)
inline constexpr std::int64_t kParts = 256;

// Where the k-th of channel c's n * hw values is.
TINYNET_HOST_DEVICE inline std::int64_t channel_value(const BatchNormGeometry& g, std::int64_t c, std::int64_t k) {
  return ((k / g.hw) * g.c + c) * g.hw + k % g.hw;
}

// partial[c * kParts + p]: share p of channel c's sum of x, or, given the mean, of (x - mean)^2.
template <typename T>
struct BatchNormPartialMoments {
  BatchNormGeometry g;
  const T* x;
  const double* mean;  // null: the first moment
  double* partial;
  TINYNET_HOST_DEVICE void operator()(std::int64_t t) const {
    const std::int64_t c = t / kParts;
    double s = 0;
    for (std::int64_t k = t % kParts; k < g.count(); k += kParts) {
      const double v = static_cast<double>(x[channel_value(g, c, k)]);
      s += mean ? (v - mean[c]) * (v - mean[c]) : v;
    }
    partial[t] = s;
  }
};

// out[c] = (channel c's partial sums) / divisor.
struct BatchNormSumParts {
  const double* partial;
  double divisor;
  double* out;
  TINYNET_HOST_DEVICE void operator()(std::int64_t c) const {
    double s = 0;
    for (std::int64_t p = 0; p < kParts; ++p) s += partial[c * kParts + p];
    out[c] = s / divisor;
  }
};

// The batch mean and biased variance, from their double sums.
template <typename T>
struct BatchNormStoreStats {
  const double* moments;  // [mean..., var...]
  std::int64_t c;
  T* mean;
  T* var;
  TINYNET_HOST_DEVICE void operator()(std::int64_t i) const {
    mean[i] = static_cast<T>(moments[i]);
    var[i] = static_cast<T>(moments[c + i]);
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
  bool relu;
  TINYNET_HOST_DEVICE void operator()(std::int64_t e) const {
    const std::int64_t c = (e / g.hw) % g.c;
    const T scale = invstd[c] * (w ? w[c] : T(1)), shift = (b ? b[c] : T(0)) - mean[c] * scale;
    const T v = x[e] * scale + shift;
    y[e] = relu ? Relu{}.forward(v) : v;
  }
};

// partial[2 (c * kParts + p)] and [... + 1]: share p of channel c's sum(dy) and sum(dy xhat).
template <typename T>
struct BatchNormGradPartials {
  BatchNormGeometry g;
  const T* x;
  const T* gy;
  const T* y_relu;
  const T* mean;
  const T* invstd;
  double* partial;
  TINYNET_HOST_DEVICE void operator()(std::int64_t t) const {
    const std::int64_t c = t / kParts;
    double sum_dy = 0, sum_dy_xhat = 0;
    for (std::int64_t k = t % kParts; k < g.count(); k += kParts) {
      const std::int64_t e = channel_value(g, c, k);
      const T dy = batch_norm_dy(gy, y_relu, e);
      sum_dy += dy;
      sum_dy_xhat += dy * (x[e] - mean[c]) * invstd[c];
    }
    partial[2 * t] = sum_dy;
    partial[2 * t + 1] = sum_dy_xhat;
  }
};

template <typename T>
struct BatchNormGradSums {  // per channel: sum(dy), sum(dy xhat) into sums[2c], sums[2c+1] (double)
  const double* partial;
  double* sums;
  T* dw;
  bool acc_dw;
  T* db;
  bool acc_db;
  TINYNET_HOST_DEVICE void operator()(std::int64_t c) const {
    double sum_dy = 0, sum_dy_xhat = 0;
    for (std::int64_t p = 0; p < kParts; ++p) {
      sum_dy += partial[2 * (c * kParts + p)];
      sum_dy_xhat += partial[2 * (c * kParts + p) + 1];
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
  const T* y_relu;
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
    T d = batch_norm_dy(gy, y_relu, e);
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
  detail::DeviceScratch<double> partial(g.c * detail::kParts), moments(2 * g.c);
  const double count = static_cast<double>(g.count());
  for_each_index(g.c * detail::kParts, detail::BatchNormPartialMoments<T>{g, x, nullptr, partial.data()});
  for_each_index(g.c, detail::BatchNormSumParts{partial.data(), count, moments.data()});
  for_each_index(g.c * detail::kParts, detail::BatchNormPartialMoments<T>{g, x, moments.data(), partial.data()});
  for_each_index(g.c, detail::BatchNormSumParts{partial.data(), count, moments.data() + g.c});
  for_each_index(g.c, detail::BatchNormStoreStats<T>{moments.data(), g.c, mean, var});
  const double unbias = static_cast<double>(g.count()) / static_cast<double>(g.count() - 1);
  for_each_index(g.c, BatchNormFinalize<T>{mean, var, invstd, running_mean, running_var, momentum, eps, unbias});
}

/// Evaluation statistics from the running ones.
template <typename T>
void batch_norm_eval_stats(Tag, const BatchNormGeometry& g, const T* running_mean, const T* running_var, T* mean,
                           T* invstd, double eps) {
  for_each_index(g.c, BatchNormRunning<T>{running_mean, running_var, mean, invstd, eps});
}

/// y = (x - mean[c]) * invstd[c] * w[c] + b[c]   (w, b may be null), and with `relu`
/// relu(y).
template <typename T>
void batch_norm_apply(Tag, const BatchNormGeometry& g, const T* x, const T* mean, const T* invstd, const T* w,
                      const T* b, T* y, bool relu) {
  for_each_index(g.n * g.c * g.hw, detail::BatchNormApply<T>{g, x, mean, invstd, w, b, y, relu});
}

/// Gradients of batch_norm (see the CPU kernel for the formulas). `sums` is device scratch
/// of 2 * C doubles. Any of dx, dw, db may be null; y_relu too (else the output of the
/// ReLU fused after batch_norm: dy = gy where it is positive).
template <typename T>
void batch_norm_backward(Tag, const BatchNormGeometry& g, const T* x, const T* mean, const T* invstd, const T* w,
                         const T* gy, const T* y_relu, bool training, T* dx, bool acc_dx, T* dw, bool acc_dw, T* db,
                         bool acc_db, double* sums) {
  detail::DeviceScratch<double> partial(2 * g.c * detail::kParts);
  for_each_index(g.c * detail::kParts,
                 detail::BatchNormGradPartials<T>{g, x, gy, y_relu, mean, invstd, partial.data()});
  for_each_index(g.c, detail::BatchNormGradSums<T>{partial.data(), sums, dw, acc_dw, db, acc_db});
  if (dx)
    for_each_index(g.n * g.c * g.hw,
                   detail::BatchNormInputGrad<T>{g, x, gy, y_relu, mean, invstd, w, sums, training, dx, acc_dx});
}

}  // namespace tinynet::backend::cuda

#endif  // TINYNET_WITH_CUDA
