#pragma once
// Exit codes, chosen for Kubernetes restart policies: Kubeflow's ExitCode policy treats
// 1-127 as permanent failures and 128-255 as retryable. Bad flags (CLI11's codes, 100-127),
// bad data, bad files and a misconfigured job (bad launch variables, ranks that disagree)
// are permanent: restarting cannot fix them. A lost peer or a timeout in data-parallel
// training is retryable: restarting the job (from its last checkpoint) can succeed. So is
// a run stopped by SIGTERM or SIGINT, which exits 128 + the signal (stop.hpp).

#include <cstdio>
#include <exception>
#include <tinynet/data/error.hpp>
#include <tinynet/dist/error.hpp>
#include <tinynet/io/error.hpp>

namespace job {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;       ///< any other error (message on stderr)
inline constexpr int kExitBadInput = 2;    ///< an argument the run cannot use (e.g. WORLD_SIZE)
inline constexpr int kExitDataError = 3;   ///< data set not obtainable (no source worked, checksum mismatch)
inline constexpr int kExitFileError = 4;   ///< a data, model or checkpoint file unreadable, corrupt or mismatched
inline constexpr int kExitPeerLost = 200;  ///< retryable: a peer or the store was lost or unreachable
inline constexpr int kExitTimeout = 201;   ///< retryable: a peer did not answer within the timeout

/// Whether `e` is one of the types Ts.
template <class... Ts>
bool is_any(const std::exception& e) {
  return ((dynamic_cast<const Ts*>(&e) != nullptr) || ...);
}

/// The exit code for an error that ended the run.
inline int exit_code_for(const std::exception& e) {
  if (is_any<tinynet::data::FetchError, tinynet::data::ChecksumError>(e)) return kExitDataError;
  if (is_any<tinynet::FileError, tinynet::FormatError, tinynet::StateDictError>(e)) return kExitFileError;
  if (is_any<tinynet::dist::DistTimeoutError>(e)) return kExitTimeout;
  if (is_any<tinynet::dist::DistError>(e)) return kExitPeerLost;
  if (is_any<tinynet::ValueError>(e)) return kExitBadInput;  // includes DistConfigError
  return kExitError;
}

/// Runs `body`, turning an exception into a message on stderr and an exit code.
template <class F>
int run_guarded(F&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return exit_code_for(e);
  }
}

}  // namespace job
