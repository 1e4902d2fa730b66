#pragma once
/// \file
/// ContentReader: the uncompressed content of a file, read in chunks, whether the file
/// is stored raw or gzip-compressed. Compression is detected from the gzip magic bytes
/// (1F 8B), never from the file name: downloads are often renamed, or saved still
/// compressed under the uncompressed name.
///
/// Reading is streamed with a fixed-size input buffer, so the memory used is the caller's
/// output buffer and nothing more. Concatenated gzip members (valid gzip) are read as one
/// stream; anything else after the last member, and a stream that stops before its
/// trailer, are FormatErrors. zlib checks each member's CRC-32 and length.

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include "tinynet/data/error.hpp"

namespace tinynet::data {

namespace detail {
struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
}  // namespace detail

/// Streams the uncompressed content of one file (raw, or gzip detected by magic bytes).
class ContentReader {
 public:
  /// Opens `path`. Throws FileError if it is missing, unreadable or a directory.
  explicit ContentReader(std::filesystem::path path) : path_(std::move(path)) {
    std::error_code ec;
    TINYNET_CHECK(FileError, !std::filesystem::is_directory(path_, ec), "'", path_.string(),
                  "': is a directory, expected a file");
    file_.reset(std::fopen(path_.c_str(), "rb"));
    TINYNET_CHECK(FileError, file_ != nullptr, "'", path_.string(), "': cannot open: ", std::strerror(errno));
    file_size_ = std::filesystem::file_size(path_, ec);
    TINYNET_CHECK(FileError, !ec, "'", path_.string(), "': cannot get its size: ", ec.message());

    // Sniff the first two bytes; they stay in the input buffer for whichever path reads them.
    in_len_ = fill(in_.data(), 2);
    gzip_ = in_len_ == 2 && in_[0] == 0x1F && in_[1] == 0x8B;
    if (gzip_) {
      zs_ = std::make_unique<z_stream>();
      std::memset(zs_.get(), 0, sizeof(z_stream));
      // 16 + MAX_WBITS: gzip wrapper only (we detected it), header and trailer checked.
      TINYNET_CHECK(FormatError, inflateInit2(zs_.get(), 16 + MAX_WBITS) == Z_OK, "'", path_.string(),
                    "': zlib could not start a gzip stream");
      zs_->next_in = in_.data();
      zs_->avail_in = static_cast<uInt>(in_len_);
      member_started_ = true;
    }
  }

  ~ContentReader() {
    if (zs_) inflateEnd(zs_.get());
  }
  ContentReader(const ContentReader&) = delete;
  ContentReader& operator=(const ContentReader&) = delete;

  /// True when the file is gzip-compressed.
  bool compressed() const { return gzip_; }
  /// Size of the file on disk, in bytes.
  std::uint64_t file_size() const { return file_size_; }
  /// Uncompressed bytes handed out so far.
  std::uint64_t position() const { return position_; }
  const std::filesystem::path& path() const { return path_; }

  /// Reads up to `n` content bytes into `dst`; returns fewer only at the end of the content.
  /// Throws FormatError for corrupt or truncated gzip data, FileError for read errors.
  std::size_t read(void* dst, std::size_t n) {
    auto* out = static_cast<unsigned char*>(dst);
    std::size_t got = 0;
    if (!gzip_) {
      got = read_raw(out, n);
      position_ += got;
      return got;
    }
    // zlib counts in uInt: hand it at most 1 GiB at a time.
    while (got < n) {
      const std::size_t part = read_gzip(out + got, std::min<std::size_t>(n - got, std::size_t{1} << 30));
      if (part == 0) break;
      got += part;
      position_ += part;
    }
    return got;
  }

 private:
  // Reads up to n bytes from the file into dst; short only at end of file.
  std::size_t fill(unsigned char* dst, std::size_t n) {
    std::size_t got = 0;
    while (got < n) {
      const std::size_t r = std::fread(dst + got, 1, n - got, file_.get());
      if (r == 0) {
        TINYNET_CHECK(FileError, !std::ferror(file_.get()), "'", path_.string(),
                      "': read error: ", std::strerror(errno));
        break;
      }
      got += r;
    }
    return got;
  }

  std::size_t read_raw(unsigned char* dst, std::size_t n) {
    std::size_t got = 0;
    if (in_len_ > in_pos_) {  // the sniffed bytes come first
      got = std::min(n, in_len_ - in_pos_);
      std::memcpy(dst, in_.data() + in_pos_, got);
      in_pos_ += got;
    }
    return got + fill(dst + got, n - got);
  }

  std::size_t read_gzip(unsigned char* dst, std::size_t n) {
    z_stream& zs = *zs_;
    const std::size_t want = n;
    zs.next_out = dst;
    zs.avail_out = static_cast<uInt>(want);
    while (zs.avail_out > 0 && !finished_) {
      if (zs.avail_in == 0) {
        const std::size_t r = fill(in_.data(), in_.size());
        if (r == 0) {
          TINYNET_CHECK(FormatError, !member_started_ || members_done_ == 0 || zs.total_out > 0, "'", path_.string(),
                        "': unexpected bytes after the end of the gzip data");
          TINYNET_CHECK(FormatError, !member_started_, "'", path_.string(),
                        "': gzip stream ends early: the compressed data stops before its end marker "
                        "(a truncated download?) after ",
                        file_size_, " compressed and ", position_ + (want - zs.avail_out), " uncompressed bytes");
          finished_ = true;
          break;
        }
        zs.next_in = in_.data();
        zs.avail_in = static_cast<uInt>(r);
        member_started_ = true;
      }
      const int ret = inflate(&zs, Z_NO_FLUSH);
      if (ret == Z_STREAM_END) {
        // A gzip file may hold several members back to back; the next one starts fresh.
        ++members_done_;
        inflateReset(&zs);
        member_started_ = zs.avail_in > 0;
        continue;
      }
      if (ret == Z_OK || ret == Z_BUF_ERROR) continue;
      TINYNET_CHECK(FormatError, ret != Z_MEM_ERROR, "'", path_.string(), "': zlib ran out of memory");
      // An error before any output of a later member: the file goes on after its gzip data.
      const bool after_member = members_done_ > 0 && zs.total_out == 0;
      throw FormatError(::tinynet::detail::concat(
          "'", path_.string(),
          "': ", after_member ? "unexpected bytes after the end of the gzip data" : "corrupt gzip data",
          " (zlib: ", zs.msg != nullptr ? zs.msg : "error " + std::to_string(ret), ") at uncompressed offset ",
          position_ + (want - zs.avail_out)));
    }
    return want - zs.avail_out;
  }

  std::filesystem::path path_;
  std::unique_ptr<std::FILE, detail::FileCloser> file_;
  std::uint64_t file_size_ = 0;
  std::uint64_t position_ = 0;
  bool gzip_ = false;
  bool finished_ = false;
  bool member_started_ = false;
  int members_done_ = 0;
  std::unique_ptr<z_stream> zs_;
  std::array<unsigned char, 1 << 16> in_{};
  std::size_t in_len_ = 0;
  std::size_t in_pos_ = 0;
};

}  // namespace tinynet::data
