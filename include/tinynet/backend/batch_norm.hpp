#pragma once
/// \file
/// batch_norm's geometry and the per-channel rules both backends share (each takes the
/// statistics its own way: backend/cpu/batch_norm.hpp, backend/cuda/batch_norm.hpp).

#include <cmath>
#include <cstdint>

#include "tinynet/backend/elementwise.hpp"
#include "tinynet/core/config.hpp"

namespace tinynet::backend {

/// An [n, c, h, w] input (hw = h * w; 1 for [n, c]) normalised per channel.
struct BatchNormGeometry {
  std::int64_t n, c, hw;
  TINYNET_HOST_DEVICE std::int64_t count() const { return n * hw; }
};

/// Channel c in training: invstd from the variance, and the running statistics updated in
/// place (either may be null) with the unbiased variance: r = (1 - momentum) r + momentum s.
template <typename T>
struct BatchNormFinalize {
  const T* mean;
  const T* var;
  T* invstd;
  T* running_mean;
  T* running_var;
  double momentum, eps, unbias;
  TINYNET_HOST_DEVICE void operator()(std::int64_t c) const {
    invstd[c] = T(1) / std::sqrt(var[c] + static_cast<T>(eps));
    if (running_mean) running_mean[c] = static_cast<T>((1 - momentum) * running_mean[c] + momentum * mean[c]);
    if (running_var) running_var[c] = static_cast<T>((1 - momentum) * running_var[c] + momentum * var[c] * unbias);
  }
};

/// batch_norm's output gradient at i: gy, or, where the op ran with the ReLU after it
/// (batch_norm_relu), gy through that ReLU, whose output y_relu (null otherwise) was saved.
template <typename T>
TINYNET_HOST_DEVICE T batch_norm_dy(const T* gy, const T* y_relu, std::int64_t i) {
  return y_relu ? Relu{}.backward(gy[i], T(0), y_relu[i]) : gy[i];
}

/// Channel c in evaluation: the running statistics are the statistics.
template <typename T>
struct BatchNormRunning {
  const T* running_mean;
  const T* running_var;
  T* mean;
  T* invstd;
  double eps;
  TINYNET_HOST_DEVICE void operator()(std::int64_t c) const {
    mean[c] = running_mean[c];
    invstd[c] = T(1) / std::sqrt(running_var[c] + static_cast<T>(eps));
  }
};

}  // namespace tinynet::backend
