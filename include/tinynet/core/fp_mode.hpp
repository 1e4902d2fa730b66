#pragma once
/// \file
/// Flushing denormal floats to zero, like torch.set_flush_denormal.
///
/// Values below ~1.2e-38 (float) make x86 arithmetic fall back to slow microcode. In
/// training they appear once gradients get tiny (a well-fitted batch, Adadelta's squared
/// averages) and can slow every later step by half; flushing them to zero changes
/// results only at that magnitude. Off by default, as in PyTorch.

#include <atomic>

#if defined(__x86_64__) || defined(__SSE2__)
#include <xmmintrin.h>
#define TINYNET_HAS_MXCSR 1
#endif

namespace tinynet {

namespace detail {

inline std::atomic<bool>& flush_denormal_flag() {
  static std::atomic<bool> on{false};
  return on;
}

#if defined(TINYNET_HAS_MXCSR)
inline constexpr unsigned kFlushDenormalBits = 0x8040;  // MXCSR flush-to-zero | denormals-are-zero
#endif

/// Puts the calling thread in the mode set_flush_denormal chose. tinynet's parallel_for
/// calls it on entry to every chunk, so kernels see the mode on whichever oneTBB worker
/// runs them; a thread's mode is changed only while it runs tinynet work or after it.
inline void apply_fp_mode() {
#if defined(TINYNET_HAS_MXCSR)
  const unsigned csr = _mm_getcsr();
  const unsigned want =
      flush_denormal_flag().load(std::memory_order_relaxed) ? (csr | kFlushDenormalBits) : (csr & ~kFlushDenormalBits);
  if (want != csr) _mm_setcsr(want);
#endif
}

}  // namespace detail

/// Turns flushing of denormal floats to zero on or off for tinynet's kernels (on every
/// thread they run on) and for the calling thread. Returns false where the CPU has no
/// such mode (then nothing changes).
inline bool set_flush_denormal(bool on) {
#if defined(TINYNET_HAS_MXCSR)
  detail::flush_denormal_flag().store(on);
  detail::apply_fp_mode();
  return true;
#else
  (void)on;
  return false;
#endif
}

/// Whether set_flush_denormal(true) is in force.
inline bool flush_denormal() { return detail::flush_denormal_flag().load(); }

}  // namespace tinynet
