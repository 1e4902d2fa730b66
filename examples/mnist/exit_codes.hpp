#pragma once
// Exit codes, chosen for Kubernetes restart policies: Kubeflow's ExitCode policy treats
// 1-127 as permanent failures and 128-255 as retryable. Bad flags (CLI11's codes, 100-127),
// bad data and bad files are permanent: restarting cannot fix them.

#include <cstdio>
#include <exception>

#include <tinynet/data/error.hpp>
#include <tinynet/io/error.hpp>

namespace mnist {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;      ///< any other error (message on stderr)
inline constexpr int kExitBadInput = 2;   ///< an argument the run cannot use (e.g. WORLD_SIZE)
inline constexpr int kExitDataError = 3;  ///< data set not obtainable (no source worked, checksum mismatch)
inline constexpr int kExitFileError = 4;  ///< a data, model or checkpoint file unreadable, corrupt or mismatched

/// Whether `e` is one of the types Ts.
template <class... Ts>
bool is_any(const std::exception& e) {
  return ((dynamic_cast<const Ts*>(&e) != nullptr) || ...);
}

/// The exit code for an error that ended the run.
inline int exit_code_for(const std::exception& e) {
  if (is_any<tinynet::data::FetchError, tinynet::data::ChecksumError>(e)) return kExitDataError;
  if (is_any<tinynet::FileError, tinynet::FormatError, tinynet::StateDictError>(e)) return kExitFileError;
  if (is_any<tinynet::ValueError>(e)) return kExitBadInput;
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

}  // namespace mnist
