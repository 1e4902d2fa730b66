#pragma once
/// \file
/// nll_loss kernels. The targets are checked here, before any is used as an index.

#include <algorithm>
#include <cstdint>

#include "tinynet/backend/backend.hpp"
#include "tinynet/core/error.hpp"

namespace tinynet::backend::cpu {

/// per_sample[n] = -logp[n, target[n]]; out[0] = sum / divisor, summed in double (when
/// out is not null). IndexError naming the first target outside [0, classes).
template <typename T>
void nll_forward(Tag, const T* logp, const std::int64_t* target, T* per_sample, T* out, double divisor,
                 std::int64_t batch, std::int64_t classes) {
  for (std::int64_t i = 0; i < batch; ++i)
    TINYNET_CHECK(IndexError, target[i] >= 0 && target[i] < classes, "nll_loss: target ", target[i], " at position ", i,
                  " is out of range for ", classes, " classes");
  double sum = 0;
  for (std::int64_t i = 0; i < batch; ++i) {
    per_sample[i] = -logp[i * classes + target[i]];
    sum += static_cast<double>(per_sample[i]);
  }
  if (out != nullptr) out[0] = static_cast<T>(sum / divisor);
}

/// dlogp[n, target[n]] (+)= -gy[n] (per-sample), or -gy[0] / divisor (reduced); the other
/// entries are written 0 (or left, when accumulating).
template <typename T>
void nll_backward(Tag, const std::int64_t* target, const T* gy, bool scalar, T divisor, T* dlogp, std::int64_t batch,
                  std::int64_t classes, bool accumulate) {
  if (!accumulate) std::fill(dlogp, dlogp + batch * classes, T(0));
  const T scale = scalar ? gy[0] / divisor : T(0);
  for (std::int64_t i = 0; i < batch; ++i) dlogp[i * classes + target[i]] -= scalar ? scale : gy[i];
}

}  // namespace tinynet::backend::cpu
