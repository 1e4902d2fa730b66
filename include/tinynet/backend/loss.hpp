#pragma once
/// \file
/// nll_loss's per-element rule for the gradient, shared by both backends.

#include <cstdint>

#include "tinynet/core/config.hpp"

namespace tinynet::backend {

/// Element e = (i, c) of the gradient of nll_loss: dlogp[i, c] (+)= -gy[i] where
/// c == target[i] (per-sample), or -gy[0] / divisor (a reduced loss); 0 elsewhere.
template <typename T>
struct NllBackward {
  const std::int64_t* target;
  const T* gy;
  bool scalar;
  T divisor;
  T* dlogp;
  std::int64_t classes;
  bool accumulate;
  TINYNET_HOST_DEVICE void operator()(std::int64_t e) const {
    const std::int64_t i = e / classes;
    const T g = target[i] == e % classes ? -(scalar ? gy[0] / divisor : gy[i]) : T(0);
    dlogp[e] = accumulate ? dlogp[e] + g : g;
  }
};

}  // namespace tinynet::backend
