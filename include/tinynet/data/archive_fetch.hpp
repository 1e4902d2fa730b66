#pragma once
/// \file
/// Obtaining a data set published as one archive (CIFAR-10's cifar-10-binary.tar.gz): the
/// archive is downloaded, refused unless the MD5 of its bytes is the published one, and the
/// files the data set needs are unpacked from it (gzip by zlib, tar by data/tar.hpp).
///
/// `fetch_archive(root, source)` makes `root/<folder>` hold every file of `source.files`:
///   1. When they are all there, nothing else happens: no network.
///   2. Otherwise the archive `root/<archive>` is used if its MD5 is right; else it is
///      downloaded from each URL in turn into a temporary file, verified, and renamed into
///      place (a copy with the wrong MD5 is moved aside to `<archive>.bad-md5`).
///   3. Each wanted member is written to a temporary file and renamed into place, so an
///      interrupted unpack never leaves a partial file under a real name.
/// Failures are FetchErrors listing every URL tried and why, or FormatErrors naming what is
/// wrong with the archive (truncated, damaged, lacking a file).

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tinynet/data/checksum.hpp"
#include "tinynet/data/download.hpp"
#include "tinynet/data/error.hpp"
#include "tinynet/data/fetch.hpp"
#include "tinynet/data/tar.hpp"

namespace tinynet::data {

/// Where a data set's archive comes from and what it holds.
struct ArchiveSource {
  std::string name;                ///< for messages: "CIFAR-10"
  std::string archive;             ///< the archive's file name under the data dir
  std::string md5;                 ///< MD5 (hex) of the archive's bytes, as published
  std::vector<std::string> urls;   ///< tried in order
  std::string folder;              ///< the archive's folder holding the files, made under the data dir
  std::vector<std::string> files;  ///< the files the data set needs, in `folder`
};

namespace detail {

/// Installs a good copy of the archive at `target`, or throws FetchError listing what was tried.
inline void obtain_archive(const ArchiveSource& src, const FetchOptions& opts, const fs::path& target) {
  auto log = [&](const std::string& line) {
    if (opts.log != nullptr) *opts.log << src.name << ": " << line << std::endl;
  };
  std::vector<std::string> tried;
  std::error_code ec;
  if (fs::is_regular_file(target, ec)) {
    const std::string actual = file_md5(target);
    if (actual == src.md5) return;
    tried.push_back("present file '" + target.string() + "': MD5 mismatch: expected " + src.md5 + ", got " + actual);
    log(tried.back() + ": moved aside to '" + target.string() + ".bad-md5'");
    fs::rename(target, fs::path(target.string() + ".bad-md5"), ec);
  }
  for (const std::string& url : src.urls) {
    log("downloading " + url);
    TempPath tmp = make_temp_file(target.parent_path(), src.archive);
    const DownloadResult r = download_to_file(url, tmp.path(), opts.download);
    if (!r.ok()) {
      tried.push_back(url + ": " + r.error);
      continue;
    }
    const std::string actual = file_md5(tmp.path());
    if (actual != src.md5) {
      tried.push_back(url + ": MD5 mismatch: expected " + src.md5 + ", got " + actual + content_hint(tmp.path()));
      continue;
    }
    fsync_path(tmp.path());
    fs::rename(tmp.path(), target, ec);
    TINYNET_CHECK(FetchError, !ec, src.name, ": cannot move the download to '", target.string(), "': ", ec.message());
    tmp.release();
    log("got " + src.archive + " from " + url + " (MD5 " + src.md5 + " verified)");
    return;
  }
  std::string msg =
      src.name + ": could not obtain " + src.archive + " into '" + target.parent_path().string() + "'. Sources tried:";
  for (const std::string& t : tried) msg += "\n  - " + t;
  if (src.urls.empty()) msg += "\n  (no URLs configured)";
  throw FetchError(msg + "\nCopy the archive (MD5 " + src.md5 + ") to '" + target.string() + "' to use it.");
}

/// Writes the members `src.folder/<file>` of `archive` into `dir`, each through a temporary file.
inline void unpack_archive(const ArchiveSource& src, const fs::path& archive, const fs::path& dir) {
  std::vector<std::string> missing = src.files;
  TarReader tar(archive);
  std::vector<char> buf(std::size_t{1} << 20);
  while (auto m = tar.next()) {
    const auto it = std::find_if(missing.begin(), missing.end(),
                                 [&](const std::string& f) { return m->is_file() && m->name == src.folder + "/" + f; });
    if (it == missing.end()) continue;
    TempPath tmp = make_temp_file(dir, *it);
    {
      std::ofstream out(tmp.path(), std::ios::binary | std::ios::trunc);
      for (std::size_t n; (n = tar.read(buf.data(), buf.size())) > 0;)
        out.write(buf.data(), static_cast<std::streamsize>(n));
      out.flush();
      TINYNET_CHECK(FileError, out.good(), "'", tmp.path().string(), "': cannot write what '", archive.string(),
                    "' holds as ", m->name);
    }
    std::error_code ec;
    fs::rename(tmp.path(), dir / *it, ec);
    TINYNET_CHECK(FileError, !ec, "'", (dir / *it).string(),
                  "': cannot move the unpacked file into place: ", ec.message());
    tmp.release();
    missing.erase(it);
  }
  std::string lacking;
  for (const std::string& f : missing) lacking += (lacking.empty() ? "" : ", ") + src.folder + "/" + f;
  TINYNET_CHECK(FormatError, missing.empty(), src.name, ": '", archive.string(), "' has no ", lacking);
}

}  // namespace detail

/// Makes `data_dir / source.folder` hold every file of `source.files` (see the file comment)
/// and returns that folder.
inline std::filesystem::path fetch_archive(const std::filesystem::path& data_dir, const ArchiveSource& source,
                                           const FetchOptions& opts = {}) {
  namespace fs = std::filesystem;
  const fs::path root = fs::absolute(data_dir), dir = root / source.folder;
  bool complete = true;
  for (const std::string& f : source.files) {
    std::error_code ec;
    complete = complete && fs::is_regular_file(dir / f, ec);
  }
  if (complete) return dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  TINYNET_CHECK(FetchError, !ec, source.name, ": cannot create '", dir.string(), "' (", ec.message(),
                "); give a data directory this process can write");
  const fs::path archive = root / source.archive;
  detail::obtain_archive(source, opts, archive);
  if (opts.log != nullptr) *opts.log << source.name << ": unpacking " << archive.string() << std::endl;
  detail::unpack_archive(source, archive, dir);
  return dir;
}

}  // namespace tinynet::data
