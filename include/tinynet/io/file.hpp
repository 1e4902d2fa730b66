#pragma once
/// \file
/// Whole-file I/O for the formats: atomic, durable writes and bounded reads (POSIX).
///
/// A write goes to a temporary file in the target's directory, is flushed and fsync'ed,
/// renamed over the target, and the directory is fsync'ed; on any error before the
/// rename the temporary file is removed and a file already under the target's name is
/// left exactly as it was. A crash leaves either the old file or the new one under the
/// name (and perhaps a stray hidden `.NAME.tmp.*` file beside it), never a mix. The
/// writer holds an exclusive flock on its temporary file until the rename, so
/// remove_stale_temp_files can tell a crash's leftover from a write in progress.

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tinynet/io/error.hpp"

namespace tinynet::io::detail {

/// Throws FileError "<op>: <what> '<path>': <strerror(err)>".
[[noreturn]] inline void fail_file(std::string_view op, std::string_view what, const std::filesystem::path& path,
                                   int err) {
  throw FileError(tinynet::detail::concat(op, ": ", what, " '", path.string(), "': ", std::strerror(err)));
}

/// An owned file descriptor, closed (errors ignored) on destruction unless close()d.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  /// Closes now; returns 0 or the errno of a failed close (which can report a lost write).
  int close() {
    const int r = ::close(std::exchange(fd_, -1));
    return r == 0 ? 0 : errno;
  }

 private:
  int fd_;
};

/// Removes a temporary file on scope exit unless release()d.
class TempFileGuard {
 public:
  explicit TempFileGuard(std::filesystem::path p) : path_(std::move(p)) {}
  TempFileGuard(const TempFileGuard&) = delete;
  TempFileGuard& operator=(const TempFileGuard&) = delete;
  ~TempFileGuard() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  void release() { path_.clear(); }

 private:
  std::filesystem::path path_;
};

/// Writes `n` bytes, retrying short writes and EINTR; returns 0 or errno.
inline int write_all(int fd, const std::byte* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return 0;
}

/// Reads exactly `n` bytes; returns how many were read before end of file (or -errno).
inline std::ptrdiff_t read_all(int fd, std::byte* p, std::size_t n) {
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, p + got, n - got);
    if (r < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (r == 0) break;
    got += static_cast<std::size_t>(r);
  }
  return static_cast<std::ptrdiff_t>(got);
}

/// fsyncs a directory so that a rename in it survives a crash. File systems that cannot
/// sync directories answer EINVAL; that is not an error.
inline int sync_directory(const std::filesystem::path& dir) {
  Fd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (d.get() < 0) return errno;
  if (::fsync(d.get()) != 0 && errno != EINVAL) return errno;
  return d.close();
}

/// Atomically replaces `path` with `bytes` (see the file comment).
/// Throws FileError naming `op`, the path and the system's reason.
inline void write_file_atomic(const std::filesystem::path& path, std::span<const std::byte> bytes,
                              std::string_view op) {
  const std::filesystem::path name = path.filename();
  if (name.empty() || name == "." || name == "..")
    throw FileError(tinynet::detail::concat(op, ": '", path.string(), "' does not name a file"));
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");

  static std::atomic<unsigned> counter{0};
  std::filesystem::path tmp;
  Fd fd;
  for (int attempt = 0;; ++attempt) {
    tmp = dir / tinynet::detail::concat(".", name.string(), ".tmp.", ::getpid(), ".", counter++);
    fd = Fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
    if (fd.get() >= 0) break;
    if (errno != EEXIST || attempt == 100) fail_file(op, "cannot create a temporary file next to", path, errno);
  }
  TempFileGuard guard(tmp);
  // Held (through a second descriptor, past the close that reports lost writes) until the
  // rename: the file is in use. A file system without flock leaves the file unheld, and
  // remove_stale_temp_files then cannot take it either.
  ::flock(fd.get(), LOCK_EX | LOCK_NB);
  Fd lock(::dup(fd.get()));
  if (const int err = write_all(fd.get(), bytes.data(), bytes.size())) fail_file(op, "writing", path, err);
  if (::fsync(fd.get()) != 0) fail_file(op, "syncing", path, errno);
  if (const int err = fd.close()) fail_file(op, "closing", path, err);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail_file(op, "renaming the temporary file over", path, errno);
  guard.release();
  lock = Fd();
  if (const int err = sync_directory(dir))
    fail_file(op, "the file is in place, but its directory could not be synced, so a crash may lose it:", dir, err);
}

/// An open regular file and its size.
struct OpenedFile {
  Fd fd;
  std::uint64_t size = 0;
};

/// Opens `path` for reading; FileError if it cannot be opened or is not a regular file.
inline OpenedFile open_for_reading(const std::filesystem::path& path, std::string_view op) {
  OpenedFile f{Fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC))};
  if (f.fd.get() < 0) fail_file(op, "cannot open", path, errno);
  struct stat st {};
  if (::fstat(f.fd.get(), &st) != 0) fail_file(op, "cannot stat", path, errno);
  if (!S_ISREG(st.st_mode))
    throw FileError(tinynet::detail::concat(op, ": '", path.string(), "' is not a regular file"));
  f.size = static_cast<std::uint64_t>(st.st_size);
  return f;
}

}  // namespace tinynet::io::detail

namespace tinynet::io {

/// Removes the hidden temporary files beside `target` (`.NAME.tmp.PID.N`) that atomic
/// writes of `target` left when their process died between creating and renaming them
/// (SIGKILL, a second SIGTERM, a lost node). A file that no process holds locked is such a leftover,
/// whichever process or PID namespace made it (a container's trainer is PID 1 in every
/// run); one a writer holds is left alone. Returns the files removed; errors are ignored,
/// as this only tidies up.
inline std::vector<std::filesystem::path> remove_stale_temp_files(const std::filesystem::path& target) {
  namespace fs = std::filesystem;
  std::vector<fs::path> removed;
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string prefix = "." + target.filename().string() + ".tmp.";
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path p = it->path();
    if (!p.filename().string().starts_with(prefix) || !it->is_regular_file(ec)) continue;
    detail::Fd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (fd.get() < 0 || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue;
    if (::unlink(p.c_str()) == 0) removed.push_back(p);
  }
  return removed;
}

}  // namespace tinynet::io
