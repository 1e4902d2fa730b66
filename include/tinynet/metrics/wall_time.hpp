#pragma once
/// \file
/// The clock metrics are stamped with.

#include <chrono>

namespace tinynet::metrics {

/// Seconds since the Unix epoch, with sub-second precision: the `wall_time` of JSON-lines
/// rows and TensorBoard events.
inline double wall_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace tinynet::metrics
