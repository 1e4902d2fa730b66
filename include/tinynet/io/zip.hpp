#pragma once
/// \file
/// The zip container of PyTorch's files (torch.save since 1.6): reading the directory of
/// an archive held in memory, and writing one. Only what PyTorch writes is accepted:
/// entries stored uncompressed, unencrypted, on one disk; ZIP64 sizes and offsets are
/// understood. Every offset and size is checked against the archive before it is used,
/// so an entry is a view of the archive's own bytes and nothing is allocated from a
/// number in the file (a "zip bomb" that announces huge sizes is an error).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "tinynet/io/error.hpp"
#include "tinynet/io/format.hpp"

namespace tinynet::io::detail {

/// One stored entry: its name and where its bytes are in the archive.
struct ZipEntry {
  std::string name;
  std::uint64_t offset = 0;  ///< of the entry's data, from the start of the archive
  std::uint64_t size = 0;
  std::uint32_t crc = 0;
};

inline constexpr std::uint32_t kZipLocalSig = 0x04034b50;
inline constexpr std::uint32_t kZipCentralSig = 0x02014b50;
inline constexpr std::uint32_t kZipEndSig = 0x06054b50;
inline constexpr std::uint32_t kZip64EndSig = 0x06064b50;
inline constexpr std::uint32_t kZip64LocatorSig = 0x07064b50;
inline constexpr std::size_t kZipLocalSize = 30, kZipCentralSize = 46, kZipEndSize = 22;
inline constexpr std::size_t kZip64EndSize = 56, kZip64LocatorSize = 20;

/// Whether `bytes` start like a zip archive ("PK\3\4", or the end record of an empty one).
inline bool looks_like_zip(std::span<const std::byte> bytes) {
  return bytes.size() >= 4 &&
         (get_le<std::uint32_t>(bytes.data()) == kZipLocalSig || get_le<std::uint32_t>(bytes.data()) == kZipEndSig);
}

/// Bounds-checked little-endian reads from an archive; every failure names the source.
class ZipCursor {
 public:
  ZipCursor(std::span<const std::byte> bytes, std::string_view source) : bytes_(bytes), source_(source) {}

  /// The `n` bytes at `at`, or a FormatError saying which `what` runs past the end.
  std::span<const std::byte> at(std::uint64_t at, std::uint64_t n, std::string_view what) const {
    if (at > bytes_.size() || n > bytes_.size() - at)
      fail_format(source_, "truncated or corrupt zip archive: the ", what, " at offset ", at, " (", n,
                  " bytes) runs past the end of the ", bytes_.size(), "-byte file");
    return bytes_.subspan(static_cast<std::size_t>(at), static_cast<std::size_t>(n));
  }
  std::string_view source() const { return source_; }
  std::uint64_t size() const { return bytes_.size(); }

 private:
  std::span<const std::byte> bytes_;
  std::string_view source_;
};

/// The end-of-central-directory values that matter, ZIP64 ones when present.
struct ZipEnd {
  std::uint64_t entries = 0, directory_offset = 0, directory_size = 0;
};

inline ZipEnd find_zip_end(const ZipCursor& c) {
  const std::uint64_t size = c.size();
  if (size < kZipEndSize)
    fail_format(c.source(), "not a zip archive: ", size, " bytes, shorter than the 22-byte end record");
  // The end record is last, followed only by a comment of at most 65535 bytes.
  const std::uint64_t lowest = size - kZipEndSize > 0xFFFF ? size - kZipEndSize - 0xFFFF : 0;
  std::uint64_t pos = size - kZipEndSize;
  for (;; --pos) {
    const auto rec = c.at(pos, kZipEndSize, "end record");
    if (get_le<std::uint32_t>(rec.data()) == kZipEndSig &&
        pos + kZipEndSize + get_le<std::uint16_t>(rec.data() + 20) == size)
      break;
    if (pos == lowest) fail_format(c.source(), "not a zip archive (no end-of-central-directory record)");
  }
  const auto rec = c.at(pos, kZipEndSize, "end record");
  if (get_le<std::uint16_t>(rec.data() + 4) != 0 || get_le<std::uint16_t>(rec.data() + 6) != 0)
    fail_format(c.source(), "multi-disk zip archives are not supported");
  ZipEnd end{get_le<std::uint16_t>(rec.data() + 10), get_le<std::uint32_t>(rec.data() + 16),
             get_le<std::uint32_t>(rec.data() + 12)};
  if (pos >= kZip64LocatorSize) {
    const auto loc = c.at(pos - kZip64LocatorSize, kZip64LocatorSize, "ZIP64 locator");
    if (get_le<std::uint32_t>(loc.data()) == kZip64LocatorSig) {
      const auto rec64 = c.at(get_le<std::uint64_t>(loc.data() + 8), kZip64EndSize, "ZIP64 end record");
      if (get_le<std::uint32_t>(rec64.data()) != kZip64EndSig)
        fail_format(c.source(), "corrupt zip archive: the ZIP64 locator does not point to a ZIP64 end record");
      end = {get_le<std::uint64_t>(rec64.data() + 32), get_le<std::uint64_t>(rec64.data() + 48),
             get_le<std::uint64_t>(rec64.data() + 40)};
    }
  }
  return end;
}

/// Replaces the 32-bit fields that are 0xFFFFFFFF by the values of the ZIP64 extra field.
inline void apply_zip64_extra(std::span<const std::byte> extra, std::uint64_t& size, std::uint64_t& compressed,
                              std::uint64_t& local, const std::string& name, std::string_view source) {
  std::size_t at = 0;
  while (at + 4 <= extra.size()) {
    const std::uint16_t id = get_le<std::uint16_t>(extra.data() + at);
    const std::uint16_t len = get_le<std::uint16_t>(extra.data() + at + 2);
    if (at + 4 + len > extra.size()) break;
    if (id == 0x0001) {
      std::span<const std::byte> f = extra.subspan(at + 4, len);
      for (std::uint64_t* v : {&size, &compressed, &local}) {
        if (*v != 0xFFFFFFFFu) continue;
        if (f.size() < 8) fail_format(source, "corrupt zip archive: entry '", name, "' has a short ZIP64 field");
        *v = get_le<std::uint64_t>(f.data());
        f = f.subspan(8);
      }
      return;
    }
    at += 4 + len;
  }
}

/// The stored entries of the archive `bytes`, in directory order, each checked to lie
/// within the archive. FormatError (prefixed with `source`) for anything else.
inline std::vector<ZipEntry> read_zip_directory(std::span<const std::byte> bytes, std::string_view source) {
  const ZipCursor c(bytes, source);
  const ZipEnd end = find_zip_end(c);
  const auto dir = c.at(end.directory_offset, end.directory_size, "central directory");
  if (end.entries > dir.size() / kZipCentralSize)
    fail_format(source, "corrupt zip archive: ", end.entries, " entries announced, the ", dir.size(),
                "-byte central directory has room for ", dir.size() / kZipCentralSize);
  std::vector<ZipEntry> entries;
  std::unordered_set<std::string> names;
  std::uint64_t pos = end.directory_offset;
  for (std::uint64_t i = 0; i < end.entries; ++i) {
    const auto h = c.at(pos, kZipCentralSize, "central directory entry");
    if (get_le<std::uint32_t>(h.data()) != kZipCentralSig)
      fail_format(source, "corrupt zip archive: central directory entry ", i, " has a bad signature");
    const std::uint16_t flags = get_le<std::uint16_t>(h.data() + 8), method = get_le<std::uint16_t>(h.data() + 10);
    const std::uint16_t name_len = get_le<std::uint16_t>(h.data() + 28),
                        extra_len = get_le<std::uint16_t>(h.data() + 30),
                        comment_len = get_le<std::uint16_t>(h.data() + 32);
    const auto name_bytes = c.at(pos + kZipCentralSize, name_len, "entry name");
    ZipEntry e{std::string(reinterpret_cast<const char*>(name_bytes.data()), name_len), 0,
               get_le<std::uint32_t>(h.data() + 24), get_le<std::uint32_t>(h.data() + 16)};
    std::uint64_t compressed = get_le<std::uint32_t>(h.data() + 20), local = get_le<std::uint32_t>(h.data() + 42);
    apply_zip64_extra(c.at(pos + kZipCentralSize + name_len, extra_len, "entry extra field"), e.size, compressed, local,
                      e.name, source);
    if (flags & 1u) fail_format(source, "zip entry '", e.name, "' is encrypted");
    if (method != 0)
      fail_format(source, "zip entry '", e.name, "' is compressed (method ", method,
                  "); PyTorch stores its entries uncompressed");
    if (compressed != e.size)
      fail_format(source, "corrupt zip archive: stored entry '", e.name, "' has compressed size ", compressed,
                  " but size ", e.size);
    const auto lh = c.at(local, kZipLocalSize, "local header of '" + e.name + "'");
    if (get_le<std::uint32_t>(lh.data()) != kZipLocalSig)
      fail_format(source, "corrupt zip archive: the local header of '", e.name, "' has a bad signature");
    const std::uint64_t data =
        local + kZipLocalSize + get_le<std::uint16_t>(lh.data() + 26) + get_le<std::uint16_t>(lh.data() + 28);
    c.at(data, e.size, "data of '" + e.name + "'");
    e.offset = data;
    if (!names.insert(e.name).second) fail_format(source, "corrupt zip archive: two entries named '", e.name, "'");
    entries.push_back(std::move(e));
    pos += kZipCentralSize + name_len + extra_len + comment_len;
  }
  return entries;
}

/// The bytes of `e` in `archive`, after checking them against the entry's CRC-32.
inline std::span<const std::byte> zip_entry_bytes(std::span<const std::byte> archive, const ZipEntry& e,
                                                  std::string_view source) {
  const auto data = ZipCursor(archive, source).at(e.offset, e.size, "data of '" + e.name + "'");
  if (crc32(data) != e.crc)
    fail_format(source, "zip entry '", e.name, "' is corrupt (CRC-32 ", hex32(crc32(data)), ", the directory says ",
                hex32(e.crc), ")");
  return data;
}

/// Writes a zip archive of stored entries, each entry's data aligned to 64 bytes (as
/// PyTorch aligns them, so that readers can map storages in place).
class ZipWriter {
 public:
  void add(std::string_view name, std::span<const std::byte> data) {
    TINYNET_CHECK(ValueError, name.size() <= 0xFFFF, "zip entry name too long");
    // Room for this entry, its header and padding, below the 32-bit offsets of classic zip.
    TINYNET_CHECK(ValueError, std::uint64_t{out_.size()} + data.size() + 0x20000 < 0xFFFFFFFFu, "zip entry '", name,
                  "': archives of 4 GiB or more are not supported by this writer");
    const std::uint64_t local = out_.size();
    const std::size_t header_end = out_.size() + kZipLocalSize + name.size() + 4;
    const std::size_t pad = (64 - header_end % 64) % 64;
    const std::uint32_t crc = crc32(data);
    put32(kZipLocalSig);
    put16(20), put16(0), put16(0), put16(0), put16(0x21);  // version, flags, stored, 1980-01-01 00:00
    put32(crc), put32(static_cast<std::uint32_t>(data.size())), put32(static_cast<std::uint32_t>(data.size()));
    put16(static_cast<std::uint16_t>(name.size())), put16(static_cast<std::uint16_t>(4 + pad));
    put_bytes(std::as_bytes(std::span(name)));
    put16(0x4246), put16(static_cast<std::uint16_t>(pad));  // an "FB" padding field, as PyTorch writes
    out_.insert(out_.end(), pad, std::byte{'Z'});
    put_bytes(data);
    entries_.push_back({std::string(name), local, data.size(), crc});
  }

  /// The finished archive (the central directory and end record appended).
  std::vector<std::byte> finish() && {
    const std::uint64_t dir = out_.size();
    for (const ZipEntry& e : entries_) {
      put32(kZipCentralSig);
      put16(20), put16(20), put16(0), put16(0), put16(0), put16(0x21);
      put32(e.crc), put32(static_cast<std::uint32_t>(e.size)), put32(static_cast<std::uint32_t>(e.size));
      put16(static_cast<std::uint16_t>(e.name.size())), put16(0), put16(0), put16(0), put16(0), put32(0);
      put32(static_cast<std::uint32_t>(e.offset));
      put_bytes(std::as_bytes(std::span(e.name)));
    }
    const std::uint64_t dir_size = out_.size() - dir;
    TINYNET_CHECK(ValueError, entries_.size() <= 0xFFFF && out_.size() < 0xFFFFFFFFu,
                  "zip archive too large for this writer");
    put32(kZipEndSig);
    put16(0), put16(0), put16(static_cast<std::uint16_t>(entries_.size())),
        put16(static_cast<std::uint16_t>(entries_.size()));
    put32(static_cast<std::uint32_t>(dir_size)), put32(static_cast<std::uint32_t>(dir)), put16(0);
    return std::move(out_);
  }

 private:
  void put16(std::uint16_t v) { put_int(v); }
  void put32(std::uint32_t v) { put_int(v); }
  template <class U>
  void put_int(U v) {
    std::byte b[sizeof(U)];
    put_le<U>(b, v);
    out_.insert(out_.end(), b, b + sizeof(U));
  }
  void put_bytes(std::span<const std::byte> b) { out_.insert(out_.end(), b.begin(), b.end()); }

  std::vector<std::byte> out_;
  std::vector<ZipEntry> entries_;
};

}  // namespace tinynet::io::detail
