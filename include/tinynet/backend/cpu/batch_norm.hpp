#pragma once
/// \file
/// batch_norm kernels over NCHW (statistics per channel): per plane in parallel, vectors
/// of floats at the AVX2 and AVX-512 levels (simd/batch_norm.inl), the planes' sums then
/// combined per channel in double in a fixed order.

#include <cstdint>

#include "tinynet/backend/backend.hpp"
#include "tinynet/backend/batch_norm.hpp"
#include "tinynet/backend/cpu/kernels_for_isa.hpp"

namespace tinynet::backend::cpu {

/// Training statistics: mean, variance and invstd per channel, and the running statistics
/// updated (either may be null).
template <typename T>
void batch_norm_train_stats(Tag, const BatchNormGeometry& g, const T* x, T* mean, T* var, T* invstd, T* running_mean,
                            T* running_var, double momentum, double eps) {
  on_isa([&](auto level) {
    batch_norm_train_stats(level, g, x, mean, var, invstd, running_mean, running_var, momentum, eps);
  });
}

/// Evaluation statistics from the running ones.
template <typename T>
void batch_norm_eval_stats(Tag, const BatchNormGeometry& g, const T* running_mean, const T* running_var, T* mean,
                           T* invstd, double eps) {
  const BatchNormRunning<T> running{running_mean, running_var, mean, invstd, eps};
  for (std::int64_t c = 0; c < g.c; ++c) running(c);
}

/// y = (x - mean[c]) * invstd[c] * w[c] + b[c]   (w, b may be null: 1 and 0)
template <typename T>
void batch_norm_apply(Tag, const BatchNormGeometry& g, const T* x, const T* mean, const T* invstd, const T* w,
                      const T* b, T* y) {
  on_isa([&](auto level) { batch_norm_apply(level, g, x, mean, invstd, w, b, y); });
}

/// Gradients of batch_norm. With batch statistics (`training`):
///   dx = w invstd / M * (M dy - sum(dy) - xhat sum(dy xhat));
/// with fixed running statistics: dx = dy w invstd.  dw = sum(dy xhat), db = sum(dy).
/// Any of dx, dw, db may be null. `sums`: 2 * C doubles, left holding sum(dy) and
/// sum(dy xhat) per channel.
template <typename T>
void batch_norm_backward(Tag, const BatchNormGeometry& g, const T* x, const T* mean, const T* invstd, const T* w,
                         const T* gy, bool training, T* dx, bool acc_dx, T* dw, bool acc_dw, T* db, bool acc_db,
                         double* sums) {
  on_isa([&](auto level) {
    batch_norm_backward(level, g, x, mean, invstd, w, gy, training, dx, acc_dx, dw, acc_dw, db, acc_db, sums);
  });
}

}  // namespace tinynet::backend::cpu
