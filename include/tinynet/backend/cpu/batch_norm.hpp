#pragma once
/// \file
/// batch_norm kernels over NCHW (statistics per channel): per plane in parallel, vectors
/// of floats at the AVX2 and AVX-512 levels (simd/batch_norm.inl), the planes' sums then
/// combined per channel in double in a fixed order.

#include <cstdint>

#include "tinynet/backend/backend.hpp"
#include "tinynet/backend/batch_norm.hpp"
#include "tinynet/backend/bf16_activations.hpp"
#include "tinynet/backend/cpu/kernels_for_isa.hpp"
#include "tinynet/core/error.hpp"

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

/// y = (x - mean[c]) * invstd[c] * w[c] + b[c]   (w, b may be null: 1 and 0), and with
/// `relu` relu(y): batch_norm and the ReLU after it in one pass.
template <typename T>
void batch_norm_apply(Tag, const BatchNormGeometry& g, const T* x, const T* mean, const T* invstd, const T* w,
                      const T* b, T* y, bool relu) {
  on_isa([&](auto level) { batch_norm_apply(level, g, x, mean, invstd, w, b, y, relu); });
}

/// Gradients of batch_norm. With batch statistics (`training`):
///   dx = w invstd / M * (M dy - sum(dy) - xhat sum(dy xhat));
/// with fixed running statistics: dx = dy w invstd.  dw = sum(dy xhat), db = sum(dy).
/// Any of dx, dw, db may be null. `sums`: 2 * C doubles, left holding sum(dy) and
/// sum(dy xhat) per channel. dy is gy, or, where batch_norm ran with the ReLU after it,
/// gy where that ReLU's output y_relu (else null) is positive.
template <typename T>
void batch_norm_backward(Tag, const BatchNormGeometry& g, const T* x, const T* mean, const T* invstd, const T* w,
                         const T* gy, const T* y_relu, bool training, T* dx, bool acc_dx, T* dw, bool acc_dw, T* db,
                         bool acc_db, double* sums) {
  on_isa([&](auto level) {
    batch_norm_backward(level, g, x, mean, invstd, w, gy, y_relu, training, dx, acc_dx, dw, acc_dw, db, acc_db, sums);
  });
}

/// Whether batch_norm under autocast reads its bfloat16 input as it is here
/// (backend/bf16_activations.hpp): at every level, the vector paths widening it as they
/// load it (the baseline's loops element by element), so that no cast precedes it.
inline bool supports_bf16(Tag, const BatchNormBf16&) {
  return on_isa([](auto level) { return decltype(level)::batch_norm_bf16; });
}

/// Calls f(level) at the level in use where batch_norm's kernels take a bfloat16 input
/// (supports_bf16 said so before any of them is called).
template <typename F>
void on_batch_norm_bf16_level(F&& f) {
  on_isa_having([](auto level) { return decltype(level)::batch_norm_bf16; }, "batch_norm: a bfloat16 input",
                std::forward<F>(f));
}

/// The kernels above for a bfloat16 input x (and gradient dx), everything else float32.
inline void batch_norm_train_stats(Tag, const BatchNormGeometry& g, const bfloat16* x, float* mean, float* var,
                                   float* invstd, float* running_mean, float* running_var, double momentum,
                                   double eps) {
  on_batch_norm_bf16_level([&](auto level) {
    batch_norm_train_stats(level, g, x, mean, var, invstd, running_mean, running_var, momentum, eps);
  });
}
inline void batch_norm_apply(Tag, const BatchNormGeometry& g, const bfloat16* x, const float* mean, const float* invstd,
                             const float* w, const float* b, float* y, bool relu) {
  on_batch_norm_bf16_level([&](auto level) { batch_norm_apply(level, g, x, mean, invstd, w, b, y, relu); });
}
inline void batch_norm_backward(Tag, const BatchNormGeometry& g, const bfloat16* x, const float* mean,
                                const float* invstd, const float* w, const float* gy, const float* y_relu,
                                bool training, bfloat16* dx, bool acc_dx, float* dw, bool acc_dw, float* db,
                                bool acc_db, double* sums) {
  on_batch_norm_bf16_level([&](auto level) {
    batch_norm_backward(level, g, x, mean, invstd, w, gy, y_relu, training, dx, acc_dx, dw, acc_dw, db, acc_db, sums);
  });
}

}  // namespace tinynet::backend::cpu
