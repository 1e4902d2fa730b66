#pragma once
/// \file
/// The geometry of max_pool2d and avg_pool2d, shared by the ops layer and both backends.

#include <cstdint>

namespace tinynet::backend {

/// Square windows of k over planes (N * C of them) of h x w, stride s, zero padding p,
/// giving oh x ow outputs per plane.
struct Pool2dGeometry {
  std::int64_t planes, h, w;  // planes = N * C
  std::int64_t k, s, p;       // square kernel, stride, padding
  std::int64_t oh, ow;
};

}  // namespace tinynet::backend
