#pragma once
/// \file
/// batch_norm kernels over NCHW (statistics per channel), parallel over channels.

#include <cmath>
#include <cstdint>

#include "tinynet/backend/backend.hpp"
#include "tinynet/backend/batch_norm.hpp"
#include "tinynet/core/parallel.hpp"

namespace tinynet::backend::cpu {

/// Training statistics: mean, variance and invstd per channel, and the running statistics
/// updated (either may be null).
template <typename T>
void batch_norm_train_stats(Tag, const BatchNormGeometry& g, const T* x, T* mean, T* var, T* invstd, T* running_mean,
                            T* running_var, double momentum, double eps) {
  const BatchNormStats<T> stats{g, x, mean, var};
  parallel_for(g.c, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t c = lo; c < hi; ++c) stats(c);
  });
  const double unbias = static_cast<double>(g.count()) / static_cast<double>(g.count() - 1);
  const BatchNormFinalize<T> finalize{mean, var, invstd, running_mean, running_var, momentum, eps, unbias};
  for (std::int64_t c = 0; c < g.c; ++c) finalize(c);
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
  parallel_for(g.n * g.c, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t r = lo; r < hi; ++r) {
      const std::int64_t c = r % g.c;
      const T scale = invstd[c] * (w ? w[c] : T(1)), shift = (b ? b[c] : T(0)) - mean[c] * scale;
      const T* p = x + r * g.hw;
      T* q = y + r * g.hw;
      for (std::int64_t j = 0; j < g.hw; ++j) q[j] = p[j] * scale + shift;
    }
  });
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
  const double m = static_cast<double>(g.count());
  parallel_for(g.c, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t c = lo; c < hi; ++c) {
      double sum_dy = 0, sum_dy_xhat = 0;
      for (std::int64_t i = 0; i < g.n; ++i) {
        const T* xp = x + (i * g.c + c) * g.hw;
        const T* gp = gy + (i * g.c + c) * g.hw;
        for (std::int64_t j = 0; j < g.hw; ++j) {
          sum_dy += gp[j];
          sum_dy_xhat += gp[j] * (xp[j] - mean[c]) * invstd[c];
        }
      }
      sums[2 * c] = sum_dy;
      sums[2 * c + 1] = sum_dy_xhat;
      if (dw) dw[c] = (acc_dw ? dw[c] : T(0)) + static_cast<T>(sum_dy_xhat);
      if (db) db[c] = (acc_db ? db[c] : T(0)) + static_cast<T>(sum_dy);
      if (!dx) continue;
      const T k = invstd[c] * (w ? w[c] : T(1));
      for (std::int64_t i = 0; i < g.n; ++i) {
        const T* xp = x + (i * g.c + c) * g.hw;
        const T* gp = gy + (i * g.c + c) * g.hw;
        T* dp = dx + (i * g.c + c) * g.hw;
        for (std::int64_t j = 0; j < g.hw; ++j) {
          T d = gp[j];
          if (training) {
            const T xhat = (xp[j] - mean[c]) * invstd[c];
            d = static_cast<T>(d - sum_dy / m - xhat * sum_dy_xhat / m);
          }
          dp[j] = (acc_dx ? dp[j] : T(0)) + k * d;
        }
      }
    }
  });
}

}  // namespace tinynet::backend::cpu
