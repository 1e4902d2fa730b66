#pragma once
/// \file
/// The file the metrics writers append to: every write is handed to the operating system
/// at once (fflush), so a run that is killed leaves only whole lines and records behind.

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string_view>

#include "tinynet/core/error.hpp"

namespace tinynet::metrics::detail {

/// An open file that writes through to the operating system after every write.
class OutputFile {
 public:
  /// Opens `path` for writing (truncating it) or appending; FileError naming `owner`, the
  /// path and the system's reason when it cannot.
  OutputFile(std::string_view owner, std::filesystem::path path, bool append)
      : owner_(owner), path_(std::move(path)), file_(std::fopen(path_.c_str(), append ? "ab" : "wb")) {
    if (!file_) fail("cannot open");
  }

  const std::filesystem::path& path() const { return path_; }

  /// Writes `bytes` and flushes them; FileError when the system refuses (disk full, ...).
  void write(std::string_view bytes) {
    if (std::fwrite(bytes.data(), 1, bytes.size(), file_.get()) != bytes.size() || std::fflush(file_.get()) != 0)
      fail("cannot write to");
  }

 private:
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };

  [[noreturn]] void fail(std::string_view what) const {
    throw FileError(tinynet::detail::concat(owner_, ": ", what, " '", path_.string(), "': ", std::strerror(errno)));
  }

  std::string_view owner_;
  std::filesystem::path path_;
  std::unique_ptr<std::FILE, Closer> file_;
};

}  // namespace tinynet::metrics::detail
