#pragma once
/// \file
/// parallel_for over an index range through oneTBB, capped by set_num_threads(): the one way
/// CPU work is spread over threads (kernels, data loading, transforms).

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <atomic>
#include <cstdint>

#include "tinynet/core/fp_mode.hpp"
#include "tinynet/core/threading.hpp"

namespace tinynet {

namespace detail {
inline void ensure_thread_setting() {
  static std::atomic<bool> done{false};
  if (!done.load(std::memory_order_acquire)) {
    (void)get_num_threads();
    done.store(true, std::memory_order_release);
  }
}
}  // namespace detail

/// Calls `body(begin, end)` on chunks of [0, n) of at least `grain` indices, in parallel
/// when there is more than one chunk; serially (no TBB overhead) otherwise.
template <typename Body>
void parallel_for(std::int64_t n, std::int64_t grain, Body&& body) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  detail::apply_fp_mode();
  if (n <= grain) {
    body(std::int64_t{0}, n);
    return;
  }
  detail::ensure_thread_setting();
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, n, grain), [&](const tbb::blocked_range<std::int64_t>& r) {
    detail::apply_fp_mode();
    body(r.begin(), r.end());
  });
}

/// Elements per chunk for cheap elementwise loops: below this, threading costs more than it saves.
inline constexpr std::int64_t kElementwiseGrain = 32768;

}  // namespace tinynet
