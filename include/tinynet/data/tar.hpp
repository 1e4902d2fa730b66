#pragma once
/// \file
/// TarReader: the members of a tar archive (POSIX ustar, with pax or GNU tar's long names),
/// raw or gzip-compressed (ContentReader), streamed member by member.
///
/// An archive is 512-byte blocks: a header per member (name, octal size, a checksum of the
/// header itself), the member's data padded to whole blocks, and two zero blocks at the end.
/// Every way a download can be damaged is a FormatError naming the archive and the member:
/// a header whose checksum fails, a size that is not a number, data or headers cut short,
/// and an archive that ends without its two zero blocks.

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "tinynet/data/content_reader.hpp"
#include "tinynet/data/error.hpp"

namespace tinynet::data {

/// One member of a tar archive.
struct TarMember {
  std::string name;  ///< its path in the archive ("cifar-10-batches-bin/data_batch_1.bin")
  char type = '0';   ///< '0' a regular file, '5' a directory, ... (ustar's typeflag)
  std::uint64_t size = 0;

  bool is_file() const { return type == '0' || type == '\0' || type == '7'; }
};

/// Reads a tar archive's members in order: `next()` moves to a member, `read` its data.
class TarReader {
 public:
  /// Opens `path`. Throws FileError when it cannot be read.
  explicit TarReader(const std::filesystem::path& path) : in_(path) {}

  /// The next member, or nullopt at the archive's end. Skips what was left unread of the
  /// previous one. Throws FormatError for a damaged or truncated archive.
  std::optional<TarMember> next() {
    skip(left_ + pad_);
    left_ = pad_ = 0;
    std::string long_name;
    for (;;) {
      Block h;
      const std::size_t got = in_.read(h.data(), h.size());
      TINYNET_CHECK(FormatError, got != 0, where(), ": ends without the two zero blocks that close a tar archive ",
                    "(truncated?)");
      TINYNET_CHECK(FormatError, got == h.size(), where(), ": ends inside a member header (truncated)");
      if (std::all_of(h.begin(), h.end(), [](unsigned char b) { return b == 0; })) return std::nullopt;
      TarMember m = parse(h);
      if (m.type == 'L') {  // GNU tar: the next member's name is this member's data
        long_name = read_string(m.size);
        continue;
      }
      if (m.type == 'x') {  // pax attributes of the next member: only its path matters here
        if (auto path = pax_path(read_string(m.size))) long_name = *path;
        continue;
      }
      if (m.type == 'g') {  // pax attributes of the whole archive
        skip(m.size + padding(m.size));
        continue;
      }
      if (!long_name.empty()) m.name = long_name;
      left_ = m.type == '5' ? 0 : m.size;
      pad_ = padding(left_);
      current_ = m.name;
      return m;
    }
  }

  /// Reads up to `n` bytes of the current member's data; returns 0 at its end. Throws
  /// FormatError when the archive ends inside the member.
  std::size_t read(void* dst, std::size_t n) {
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(n, left_));
    const std::size_t got = in_.read(dst, want);
    TINYNET_CHECK(FormatError, got == want, where(), ": member '", current_, "' is cut short (truncated archive)");
    left_ -= got;
    return got;
  }

 private:
  using Block = std::array<unsigned char, 512>;

  std::string where() const { return ::tinynet::detail::concat("'", in_.path().string(), "'"); }
  static std::uint64_t padding(std::uint64_t size) { return (512 - size % 512) % 512; }

  // An octal number field (NUL- or space-terminated), or GNU's base-256 form for large sizes.
  std::uint64_t number(const unsigned char* f, std::size_t len, const std::string& name, const char* what) const {
    std::uint64_t v = 0;
    if (f[0] & 0x80) {
      for (std::size_t i = 1; i < len; ++i) v = (v << 8) | f[i];
      return v;
    }
    std::size_t i = 0;
    while (i < len && f[i] == ' ') ++i;
    const std::size_t digits = i;
    for (; i < len && f[i] >= '0' && f[i] <= '7'; ++i) v = v * 8 + static_cast<std::uint64_t>(f[i] - '0');
    TINYNET_CHECK(FormatError, i > digits && (i == len || f[i] == '\0' || f[i] == ' '), where(),
                  ": the header of member '", name, "' has a ", what, " that is not an octal number (not a tar file?)");
    return v;
  }

  TarMember parse(const Block& h) const {
    auto text = [&](std::size_t at, std::size_t len) {
      const auto* p = reinterpret_cast<const char*>(h.data() + at);
      return std::string(p, std::find(p, p + len, '\0'));
    };
    TarMember m;
    m.name = text(0, 100);
    const std::uint64_t stored = number(h.data() + 148, 8, m.name, "checksum");
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < h.size(); ++i) sum += i >= 148 && i < 156 ? ' ' : h[i];
    TINYNET_CHECK(FormatError, sum == stored, where(), ": the header of member '", m.name,
                  "' fails its checksum (a damaged archive, or not a tar file)");
    if (text(257, 5) == "ustar") {  // ustar splits long paths into prefix/name
      const std::string prefix = text(345, 155);
      if (!prefix.empty()) m.name = prefix + "/" + m.name;
    }
    m.type = static_cast<char>(h[156]);
    m.size = number(h.data() + 124, 12, m.name, "size");
    return m;
  }

  void skip(std::uint64_t n) {
    Block buf;
    while (n > 0) {
      const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(n, buf.size()));
      TINYNET_CHECK(FormatError, in_.read(buf.data(), want) == want, where(), ": member '", current_,
                    "' is cut short (truncated archive)");
      n -= want;
    }
  }

  std::string read_string(std::uint64_t size) {
    TINYNET_CHECK(FormatError, size <= 65536, where(), ": a long name or pax attributes of ", size,
                  " bytes (a damaged archive)");
    std::string s(static_cast<std::size_t>(size), '\0');
    TINYNET_CHECK(FormatError, in_.read(s.data(), s.size()) == s.size(), where(),
                  ": ends inside a long name or pax attributes (truncated)");
    skip(padding(size));
    return s.substr(0, s.find('\0'));
  }

  // The value of the "path" record in pax attributes ("<length> <key>=<value>\n" records).
  std::optional<std::string> pax_path(const std::string& records) const {
    std::optional<std::string> path;
    for (std::size_t at = 0; at < records.size();) {
      std::size_t len = 0, i = at;
      for (; i < records.size() && records[i] >= '0' && records[i] <= '9' && len < records.size(); ++i)
        len = len * 10 + static_cast<std::size_t>(records[i] - '0');
      TINYNET_CHECK(FormatError,
                    i < records.size() && records[i] == ' ' && len >= i - at + 2 && len <= records.size() - at &&
                        records[at + len - 1] == '\n',
                    where(), ": malformed pax attributes (a damaged archive)");
      const std::string record = records.substr(i + 1, at + len - i - 2);  // without the length and the newline
      if (record.rfind("path=", 0) == 0) path = record.substr(5);
      at += len;
    }
    return path;
  }

  ContentReader in_;
  std::uint64_t left_ = 0;  // unread data of the current member
  std::uint64_t pad_ = 0;   // and the zeros after it, to the next block
  std::string current_;
};

}  // namespace tinynet::data
