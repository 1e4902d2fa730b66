#pragma once
// SIGTERM and SIGINT, taken as a training job should take them. Kubernetes stops a pod,
// torchrun its workers, with SIGTERM (and SIGKILL a grace period later); a container's
// trainer is often its PID 1, to which the kernel delivers no signal that has no handler.
// So real handlers are installed (sigaction), and:
//   - before training starts (loading data, joining the job) and in --evaluate, a signal
//     ends the process at once: there is nothing to save;
//   - while training, it only sets a flag, which the loop reads at every batch boundary:
//     the run stops there, rank 0 writes a checkpoint (with --checkpoint-dir) through the
//     usual atomic write, and the process exits 128 + the signal (143, 130); in a
//     data-parallel job the ranks agree at each boundary whether any of them was told to
//     stop (distributed.hpp), so all stop at the same one;
//   - a second signal ends the process at once (exit 128 + the signal). A checkpoint
//     write it cuts short leaves a temporary file, which the next run removes.

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "program.hpp"

namespace job {

namespace stop_detail {

inline std::atomic<int> received{0};            ///< the first signal received, 0 for none
inline std::atomic<bool> at_boundaries{false};  ///< whether the training loop is polling `received`

/// write(2) of a C string: what a signal handler may do to say something.
inline void say(const char* text) {
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, text, std::strlen(text));
}

inline void on_signal(int sig) {
  const bool first = received.exchange(sig) == 0;
  say(program);
  say(sig == SIGTERM ? ": SIGTERM: " : ": SIGINT: ");
  if (first && at_boundaries.load()) {
    say("stopping at the next batch boundary (another signal stops at once)\n");
    return;
  }
  say("stopping now\n");
  ::_exit(128 + sig);
}

}  // namespace stop_detail

/// Installs the handlers for SIGTERM and SIGINT (from here on, either ends the process at
/// once, until stop_at_batch_boundaries).
inline void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = stop_detail::on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // a signal does not fail the system calls other threads are in
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
}

/// From now on the first signal is a request the training loop answers at its next batch
/// boundary. A signal received before this call has ended the process already.
inline void stop_at_batch_boundaries() { stop_detail::at_boundaries = true; }

/// The signal received (SIGTERM or SIGINT), or 0.
inline int stop_requested() { return stop_detail::received.load(); }

/// 128 + the signal: how a process stopped by it exits (143 for SIGTERM, 130 for SIGINT).
inline int exit_code_for_signal(int sig) { return 128 + sig; }

}  // namespace job
