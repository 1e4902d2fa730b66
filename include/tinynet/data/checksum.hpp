#pragma once
/// \file
/// MD5 of a file's uncompressed content (OpenSSL EVP), the checksum data sets are
/// verified by. Content, not file bytes: a correct copy has the same content MD5 whether
/// it is stored raw or gzipped, and whoever gzipped it.

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tinynet/data/content_reader.hpp"
#include "tinynet/data/error.hpp"
#include "tinynet/data/idx.hpp"

namespace tinynet::data {

namespace detail {
struct EvpCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
}  // namespace detail

/// Incremental MD5: `update` with pieces, then `hex_digest` once.
class Md5 {
 public:
  Md5() : ctx_(EVP_MD_CTX_new()) {
    TINYNET_CHECK(Error, ctx_ && EVP_DigestInit_ex(ctx_.get(), EVP_md5(), nullptr) == 1,
                  "MD5: OpenSSL could not start a digest (is MD5 disabled by the crypto policy?)");
  }
  void update(const void* data, std::size_t n) {
    TINYNET_CHECK(Error, EVP_DigestUpdate(ctx_.get(), data, n) == 1, "MD5: OpenSSL digest update failed");
  }
  /// 32 lowercase hex digits, like md5sum prints.
  std::string hex_digest() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    TINYNET_CHECK(Error, EVP_DigestFinal_ex(ctx_.get(), md, &len) == 1, "MD5: OpenSSL digest final failed");
    static constexpr char kHex[] = "0123456789abcdef";
    std::string s;
    for (unsigned int i = 0; i < len; ++i) {
      s += kHex[md[i] >> 4];
      s += kHex[md[i] & 15];
    }
    return s;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, detail::EvpCtxFree> ctx_;
};

/// MD5 (hex) of the uncompressed content of `path` (raw, or gzip detected by magic bytes),
/// the same as `gunzip -c path | md5sum` or `md5sum path`. Throws FileError or FormatError
/// (a corrupt or truncated gzip stream).
inline std::string content_md5(const std::filesystem::path& path) {
  ContentReader in(path);
  Md5 md5;
  std::vector<unsigned char> buf(std::size_t{1} << 20);
  for (std::size_t n; (n = in.read(buf.data(), buf.size())) > 0;) md5.update(buf.data(), n);
  return md5.hex_digest();
}

/// MD5 (hex) of the bytes of `path` as stored, compressed or not: what `md5sum path` prints,
/// and what archives' published checksums are of. Throws FileError.
inline std::string file_md5(const std::filesystem::path& path) {
  std::unique_ptr<std::FILE, detail::FileCloser> f(std::fopen(path.c_str(), "rb"));
  TINYNET_CHECK(FileError, f != nullptr, "'", path.string(), "': cannot open: ", std::strerror(errno));
  Md5 md5;
  std::vector<unsigned char> buf(std::size_t{1} << 20);
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0;) md5.update(buf.data(), n);
  TINYNET_CHECK(FileError, !std::ferror(f.get()), "'", path.string(), "': read error: ", std::strerror(errno));
  return md5.hex_digest();
}

namespace detail {
/// A hint about what a file holds instead of the expected data, or "".
inline std::string content_hint(const std::filesystem::path& path) {
  try {
    ContentReader in(path);
    unsigned char head[16];
    const std::size_t n = in.read(head, sizeof head);
    if (looks_like_html(head, n)) return " (it is a web page, not data: an error page saved by the download?)";
    if (n >= 2 && head[0] == 0x1F && head[1] == 0x8B) return " (its content is gzip-compressed again)";
    if (n == 0) return " (it is empty)";
  } catch (const Error&) {
  }
  return "";
}
}  // namespace detail

/// Throws ChecksumError naming `path`, the expected and the actual MD5 unless the
/// uncompressed content of `path` has MD5 `expected_md5`. Returns the actual MD5.
inline std::string verify_md5(const std::filesystem::path& path, const std::string& expected_md5) {
  std::string actual;
  try {
    actual = content_md5(path);
  } catch (const FormatError& e) {
    throw ChecksumError(::tinynet::detail::concat("'", path.string(), "': cannot check its MD5 (expected ",
                                                  expected_md5, "): ", e.what()));
  }
  TINYNET_CHECK(ChecksumError, actual == expected_md5, "'", path.string(), "': MD5 mismatch: expected ", expected_md5,
                ", got ", actual, detail::content_hint(path));
  return actual;
}

}  // namespace tinynet::data
