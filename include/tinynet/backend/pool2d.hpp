#pragma once
/// \file
/// The geometry of max_pool2d, avg_pool2d and adaptive_avg_pool2d, shared by the ops layer
/// and both backends.

#include <cstdint>

#include "tinynet/core/config.hpp"

namespace tinynet::backend {

/// Square windows of k over planes (N * C of them) of h x w, stride s, zero padding p,
/// giving oh x ow outputs per plane.
struct Pool2dGeometry {
  std::int64_t planes, h, w;  // planes = N * C
  std::int64_t k, s, p;       // square kernel, stride, padding
  std::int64_t oh, ow;
};

/// Planes (N * C of them) of h x w pooled to oh x ow by adaptive_avg_pool2d.
struct AdaptivePool2dGeometry {
  std::int64_t planes, h, w;  // planes = N * C
  std::int64_t oh, ow;
};

/// PyTorch's adaptive window: output i of n over an extent of `size` averages
/// [floor(i size / n), ceil((i + 1) size / n)), so windows may overlap by one and together
/// cover every input.
TINYNET_HOST_DEVICE inline std::int64_t adaptive_start(std::int64_t i, std::int64_t size, std::int64_t n) {
  return i * size / n;
}
TINYNET_HOST_DEVICE inline std::int64_t adaptive_end(std::int64_t i, std::int64_t size, std::int64_t n) {
  return ((i + 1) * size + n - 1) / n;
}

/// The outputs [lo, hi) of n whose adaptive window over `size` covers input i.
TINYNET_HOST_DEVICE inline void adaptive_covering(std::int64_t i, std::int64_t size, std::int64_t n, std::int64_t& lo,
                                                  std::int64_t& hi) {
  lo = i * n / size;                     // the first o with adaptive_end(o) > i
  hi = ((i + 1) * n + size - 1) / size;  // one past the last o with adaptive_start(o) <= i
  if (hi > n) hi = n;
}

}  // namespace tinynet::backend
