#pragma once
// Every path the run will write, tried before it loads data or joins a job: a typo in
// --model-path's directory or a read-only volume under --checkpoint-dir ends the run at
// once (exit code 4, naming the flag), not after hours of training. Temporary files that
// a killed write left beside them are removed at the same time.

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <tinynet/core/error.hpp>
#include <tinynet/io/file.hpp>
#include <vector>

#include "flags.hpp"

namespace job {

namespace fs = std::filesystem;

/// Throws FileError "<flag>: cannot write <what>: <why> (checked before training ...)".
[[noreturn]] inline void refuse_output(const std::string& flag, const std::string& what, const std::string& why) {
  throw tinynet::FileError(flag + ": cannot write " + what + ": " + why +
                           " (checked before training, so that the run does not fail when it first writes there)");
}

/// Creates and removes a file in `dir`: the one test that also sees read-only mounts,
/// full disks and permissions root does not bypass (NFS, /proc).
inline void probe_directory(const std::string& flag, const std::string& what, const fs::path& dir) {
  const fs::path probe = dir / (".tinynet-write-test." + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int err = errno;
    if (err != EEXIST) refuse_output(flag, what, std::strerror(err));
  } else {
    ::close(fd);
  }
  ::unlink(probe.c_str());
}

/// `--flag FILE`: its directory exists and takes new files (they are written next to it
/// and renamed over it), and FILE is not a directory. With `append`, an existing FILE
/// must open for appending (nothing is written to it).
inline void check_output_file(const std::string& flag, const std::string& file, bool append = false) {
  if (file.empty()) return;
  const fs::path path(file);
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  const std::string what = "'" + file + "'";
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    refuse_output(flag, what,
                  fs::exists(dir, ec) ? "'" + dir.string() + "' is not a directory"
                                      : "its directory '" + dir.string() + "' does not exist");
  if (fs::is_directory(path, ec)) refuse_output(flag, what, "it is a directory");
  if (path.filename().empty() || path.filename() == "." || path.filename() == "..")
    refuse_output(flag, what, "it does not name a file");
  probe_directory(flag, what, dir);
  if (append && fs::exists(path, ec)) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) refuse_output(flag, what, std::strerror(errno));
    ::close(fd);
  }
}

/// `--flag DIR`: created if missing (as the writer would), and takes new files.
inline void check_output_dir(const std::string& flag, const std::string& dir) {
  if (dir.empty()) return;
  const std::string what = "into '" + dir + "'";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) refuse_output(flag, what, ec.message());
  if (!fs::is_directory(dir, ec)) refuse_output(flag, what, "it is not a directory");
  probe_directory(flag, what, dir);
}

/// Removes the temporary files that atomic writes of `file` left when their process was
/// killed mid-write (a second SIGTERM, SIGKILL), saying so.
inline void tidy(const std::string& file) {
  if (file.empty()) return;
  for (const fs::path& p : tinynet::io::remove_stale_temp_files(file))
    std::fprintf(stderr, "Removed '%s', left by a write that was cut short\n", p.c_str());
}

/// The checkpoint file in --checkpoint-dir, or "" without one.
inline std::string checkpoint_file(const JobOptions& o) {
  return o.checkpoint_dir.empty() ? std::string() : (fs::path(o.checkpoint_dir) / "checkpoint.tnet").string();
}

/// Tries the outputs every training run may write (--model-path with --save-model,
/// --metrics-jsonl, --tensorboard, --checkpoint-dir) and removes what writes cut short left
/// beside them. The example checks its own outputs beside these.
inline void check_training_outputs(const JobOptions& o) {
  if (o.save_model) check_output_file("--model-path", o.model_path);
  check_output_file("--metrics-jsonl", o.metrics_jsonl, o.resume);
  check_output_dir("--tensorboard", o.tensorboard);
  check_output_dir("--checkpoint-dir", o.checkpoint_dir);
  for (const std::string& file : {o.save_model ? o.model_path : "", checkpoint_file(o)}) tidy(file);
}

}  // namespace job
