#pragma once
/// \file
/// The one thread-count setting every parallel kernel honours.
///
/// All CPU parallelism goes through oneTBB; this caps it with a tbb::global_control
/// created on first use from TINYNET_NUM_THREADS (or OMP_NUM_THREADS, as set by
/// torchrun), else the hardware concurrency.

#include <tbb/global_control.h>
#include <tbb/info.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>

#include "tinynet/core/error.hpp"

namespace tinynet {

namespace detail {

struct ThreadSetting {
  std::mutex mu;
  int threads = 0;
  std::unique_ptr<tbb::global_control> control;
};

inline ThreadSetting& thread_setting() {
  static ThreadSetting s;
  return s;
}

/// Parses a positive thread count from environment variable `name`; 0 when unset.
inline int threads_from_env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return 0;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  TINYNET_CHECK(ValueError, end != v && *end == '\0' && n > 0 && n <= 4096, name, "='", v,
                "' is not a positive thread count");
  return static_cast<int>(n);
}

inline void apply_threads_locked(ThreadSetting& s, int n) {
  s.control.reset();
  s.control =
      std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(n));
  s.threads = n;
}

}  // namespace detail

/// Sets how many threads tinynet's kernels and data loader use (>= 1).
inline void set_num_threads(int n) {
  TINYNET_CHECK(ValueError, n >= 1, "set_num_threads: expected a positive count, got ", n);
  auto& s = detail::thread_setting();
  std::lock_guard lock(s.mu);
  detail::apply_threads_locked(s, n);
}

/// A thread count and where it came from: "TINYNET_NUM_THREADS",
/// "OMP_NUM_THREADS" or "hardware".
struct ThreadSource {
  int threads;
  const char* source;
};

/// The current thread count, initialising it from the environment on first call.
inline int get_num_threads() {
  auto& s = detail::thread_setting();
  std::lock_guard lock(s.mu);
  if (s.threads == 0) {
    int n = detail::threads_from_env("TINYNET_NUM_THREADS");
    if (n == 0) n = detail::threads_from_env("OMP_NUM_THREADS");
    if (n == 0) n = tbb::info::default_concurrency();
    detail::apply_threads_locked(s, n);
  }
  return s.threads;
}

/// The thread count the environment asks for and which variable asked (no API call considered).
inline ThreadSource threads_from_environment() {
  if (int n = detail::threads_from_env("TINYNET_NUM_THREADS")) return {n, "TINYNET_NUM_THREADS"};
  if (int n = detail::threads_from_env("OMP_NUM_THREADS")) return {n, "OMP_NUM_THREADS"};
  return {tbb::info::default_concurrency(), "hardware"};
}

}  // namespace tinynet
