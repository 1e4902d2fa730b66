#pragma once
/// \file
/// batch_norm kernels over NCHW (statistics per channel), parallel over channels.

#include <cmath>
#include <cstdint>

#include "tinynet/backend/cpu/parallel.hpp"

namespace tinynet::backend::cpu {

struct BatchNormGeometry {
  std::int64_t n, c, hw;
  std::int64_t count() const { return n * hw; }
};

/// Per-channel batch mean and biased variance, summed in double.
template <typename T>
void batch_norm_stats(const BatchNormGeometry& g, const T* x, T* mean, T* var) {
  parallel_for(g.c, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t c = lo; c < hi; ++c) {
      double s = 0, s2 = 0;
      for (std::int64_t i = 0; i < g.n; ++i) {
        const T* p = x + (i * g.c + c) * g.hw;
        for (std::int64_t j = 0; j < g.hw; ++j) s += static_cast<double>(p[j]);
      }
      const double m = s / static_cast<double>(g.count());
      for (std::int64_t i = 0; i < g.n; ++i) {
        const T* p = x + (i * g.c + c) * g.hw;
        for (std::int64_t j = 0; j < g.hw; ++j) s2 += (p[j] - m) * (p[j] - m);
      }
      mean[c] = static_cast<T>(m);
      var[c] = static_cast<T>(s2 / static_cast<double>(g.count()));
    }
  });
}

/// y = (x - mean[c]) * invstd[c] * w[c] + b[c]   (w, b may be null: 1 and 0)
template <typename T>
void batch_norm_apply(const BatchNormGeometry& g, const T* x, const T* mean, const T* invstd, const T* w, const T* b,
                      T* y) {
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
/// Any of dx, dw, db may be null.
template <typename T>
void batch_norm_backward(const BatchNormGeometry& g, const T* x, const T* mean, const T* invstd, const T* w,
                         const T* gy, bool training, T* dx, bool acc_dx, T* dw, bool acc_dw, T* db, bool acc_db) {
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
