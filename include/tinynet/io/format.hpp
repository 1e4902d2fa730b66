#pragma once
/// \file
/// The fixed 32-byte header of tinynet files (docs/file-format.md has the whole format).
///
///   offset size  field
///   0      8     magic "TINYNET\0"
///   8      4     format version, uint32 (this build writes and reads 1)
///   12     4     kind, uint32: 1 = weights, 2 = checkpoint
///   16     8     payload length in bytes, uint64
///   24     4     CRC-32 (zlib) of the payload, uint32
///   28     4     CRC-32 (zlib) of header bytes 0..27, uint32
///   32     ...   payload: exactly `payload length` bytes, nothing after it
///
/// Every integer is little-endian. The header is written by hand (it has a fixed size,
/// so nothing in it can make a reader allocate); the payload is a cereal portable
/// binary archive (io/payload.hpp).

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>

#include "tinynet/io/error.hpp"

namespace tinynet {

/// What a file holds: a bare state_dict (model weights) or a training checkpoint.
enum class FileKind : std::uint32_t { weights = 1, checkpoint = 2 };

constexpr const char* file_kind_name(FileKind k) {
  switch (k) {
    case FileKind::weights:
      return "weights";
    case FileKind::checkpoint:
      return "checkpoint";
  }
  return "?";
}

namespace io::detail {

inline constexpr std::array<char, 8> kMagic = {'T', 'I', 'N', 'Y', 'N', 'E', 'T', '\0'};
inline constexpr std::uint32_t kFormatVersion = 1;
inline constexpr std::size_t kHeaderSize = 32;

/// The validated fields of a header.
struct Header {
  FileKind kind = FileKind::weights;
  std::uint64_t payload_size = 0;
  std::uint32_t payload_crc = 0;
};

/// zlib's CRC-32 over `bytes` (fed in chunks: crc32_z's length type is not portable).
inline std::uint32_t crc32(std::span<const std::byte> bytes) {
  uLong crc = ::crc32(0L, Z_NULL, 0);
  constexpr std::size_t kChunk = std::size_t{1} << 30;
  for (std::size_t at = 0; at < bytes.size(); at += kChunk) {
    const std::size_t n = std::min(kChunk, bytes.size() - at);
    crc = ::crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + at), static_cast<uInt>(n));
  }
  return static_cast<std::uint32_t>(crc);
}

template <typename U>
void put_le(std::byte* p, U v) {
  for (std::size_t i = 0; i < sizeof(U); ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xFF);
}

template <typename U>
U get_le(const std::byte* p) {
  U v = 0;
  for (std::size_t i = 0; i < sizeof(U); ++i) v |= static_cast<U>(std::to_integer<U>(p[i]) << (8 * i));
  return v;
}

/// The header for `payload` of `kind`.
inline std::array<std::byte, kHeaderSize> encode_header(FileKind kind, std::span<const std::byte> payload) {
  std::array<std::byte, kHeaderSize> h{};
  for (std::size_t i = 0; i < kMagic.size(); ++i) h[i] = static_cast<std::byte>(kMagic[i]);
  put_le<std::uint32_t>(h.data() + 8, kFormatVersion);
  put_le<std::uint32_t>(h.data() + 12, static_cast<std::uint32_t>(kind));
  put_le<std::uint64_t>(h.data() + 16, payload.size());
  put_le<std::uint32_t>(h.data() + 24, crc32(payload));
  put_le<std::uint32_t>(h.data() + 28, crc32(std::span(h).first(28)));
  return h;
}

inline std::string hex_bytes(std::span<const std::byte> bytes) {
  std::string s;
  char buf[4];
  for (std::byte b : bytes) {
    std::snprintf(buf, sizeof buf, "%s%02x", s.empty() ? "" : " ", std::to_integer<unsigned>(b));
    s += buf;
  }
  return s;
}

inline std::string hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

/// Validates the header at the start of `head` (the first min(file_size, 32) bytes of a
/// file of `file_size` bytes): magic, version, header checksum, kind, and that the file
/// holds exactly the announced payload. Throws FormatError prefixed with `source`.
/// Nothing is allocated from the header's numbers.
inline Header parse_header(std::span<const std::byte> head, std::uint64_t file_size, std::string_view source) {
  const auto fail = [&](auto&&... parts) { fail_format(source, parts...); };
  const std::size_t magic_seen = std::min(head.size(), kMagic.size());
  const bool magic_ok = std::equal(head.begin(), head.begin() + static_cast<std::ptrdiff_t>(magic_seen), kMagic.begin(),
                                   [](std::byte b, char c) { return b == static_cast<std::byte>(c); });
  if (!magic_ok)
    fail("not a tinynet file (starts with bytes ", hex_bytes(head.first(magic_seen)),
         ", expected the magic \"TINYNET\\0\" = ", hex_bytes(std::as_bytes(std::span(kMagic))), ")");
  if (file_size < kHeaderSize || head.size() < kHeaderSize)
    fail("truncated file: ", std::min<std::uint64_t>(file_size, head.size()), " bytes, shorter than the ", kHeaderSize,
         "-byte header");

  const std::uint32_t version = get_le<std::uint32_t>(head.data() + 8);
  if (version > kFormatVersion)
    fail("format version ", version, " is newer than this build of tinynet reads (", kFormatVersion,
         "); upgrade tinynet to load it");
  if (version != kFormatVersion) fail("unknown format version ", version, " (this build reads ", kFormatVersion, ")");

  const std::uint32_t stored_header_crc = get_le<std::uint32_t>(head.data() + 28);
  const std::uint32_t header_crc = crc32(head.first(28));
  if (stored_header_crc != header_crc)
    fail("header checksum mismatch (stored ", hex32(stored_header_crc), ", computed ", hex32(header_crc),
         "): the header is corrupt");

  const std::uint32_t kind = get_le<std::uint32_t>(head.data() + 12);
  if (kind != static_cast<std::uint32_t>(FileKind::weights) && kind != static_cast<std::uint32_t>(FileKind::checkpoint))
    fail("unknown file kind ", kind, " (1 = weights, 2 = checkpoint)");

  Header h;
  h.kind = static_cast<FileKind>(kind);
  h.payload_size = get_le<std::uint64_t>(head.data() + 16);
  h.payload_crc = get_le<std::uint32_t>(head.data() + 24);
  const std::uint64_t held = file_size - kHeaderSize;
  if (h.payload_size > held)
    fail("truncated file: the header announces ", h.payload_size, " payload bytes, the file holds ", held,
         " after the header");
  if (h.payload_size < held)
    fail(held - h.payload_size, " unexpected bytes after the ", h.payload_size, "-byte payload");
  return h;
}

/// Throws FormatError when `payload` does not have the checksum the header recorded.
inline void check_payload_crc(const Header& h, std::span<const std::byte> payload, std::string_view source) {
  const std::uint32_t crc = crc32(payload);
  TINYNET_CHECK(FormatError, crc == h.payload_crc, source, ": payload checksum mismatch (stored ", hex32(h.payload_crc),
                ", computed ", hex32(crc), "): the file is corrupt");
}

}  // namespace io::detail
}  // namespace tinynet
