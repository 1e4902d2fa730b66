#pragma once
/// \file
/// Reader for IDX files (the format of MNIST and Fashion-MNIST), raw or gzip-compressed.
///
/// Layout: magic `00 00 <type> <ndims>`, then `ndims` big-endian uint32 extents, then the
/// elements, big-endian, row-major. Everything a file can get wrong is checked before the
/// data is trusted: magic, element type, rank, each extent, the product of the extents
/// (overflow-safe) against the bytes actually present (truncated *and* oversized files
/// are errors), plus the wrong files seen in the wild: an HTML error page saved under the
/// data file's name, and a .gz holding another .gz. No buffer larger than the file can
/// hold is ever allocated: a raw file's size is known, and a gzip file cannot expand
/// more than deflate's maximum ratio.

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tinynet/data/content_reader.hpp"
#include "tinynet/data/error.hpp"

namespace tinynet::data {

/// Element type of an IDX file: the third byte of its magic number.
enum class IdxType : std::uint8_t { u8 = 0x08, i8 = 0x09, i16 = 0x0B, i32 = 0x0C, f32 = 0x0D, f64 = 0x0E };

/// Bytes per element of `t`; 0 for a byte that is not an IDX type.
constexpr std::size_t idx_element_size(IdxType t) {
  switch (t) {
    case IdxType::u8:
    case IdxType::i8:
      return 1;
    case IdxType::i16:
      return 2;
    case IdxType::i32:
    case IdxType::f32:
      return 4;
    case IdxType::f64:
      return 8;
  }
  return 0;
}

/// "u8 (0x08)" and so on, for messages.
inline std::string idx_type_name(IdxType t) {
  const char* name = "unknown";
  switch (t) {
    case IdxType::u8:
      name = "u8";
      break;
    case IdxType::i8:
      name = "i8";
      break;
    case IdxType::i16:
      name = "i16";
      break;
    case IdxType::i32:
      name = "i32";
      break;
    case IdxType::f32:
      name = "f32";
      break;
    case IdxType::f64:
      name = "f64";
      break;
  }
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned>(t));
  return std::string(name) + " (" + hex + ")";
}

/// What a caller requires of an IDX file. Checked on the header, before any data is read.
struct IdxSpec {
  std::optional<IdxType> type = {};     ///< required element type; any if unset
  int rank = 0;                         ///< required number of dims; any if 0
  std::vector<std::int64_t> dims = {};  ///< required extents, -1 for any; unchecked if empty
};

/// The content of an IDX file.
struct IdxArray {
  IdxType type = IdxType::u8;
  std::vector<std::int64_t> dims;
  std::vector<std::uint8_t> bytes;  ///< the elements exactly as stored (big-endian)

  /// Number of elements (product of dims).
  std::int64_t numel() const {
    std::int64_t n = 1;
    for (std::int64_t d : dims) n *= d;
    return n;
  }

  /// The elements decoded to host order. `T` must match `type` (std::uint8_t for u8,
  /// std::int8_t, std::int16_t, std::int32_t, float, double); throws TypeError otherwise.
  template <typename T>
  std::vector<T> values() const {
    TINYNET_CHECK(TypeError, sizeof(T) == idx_element_size(type) && type_matches<T>(),
                  "IdxArray::values: the file holds ", idx_type_name(type), " elements");
    std::vector<T> out(bytes.size() / sizeof(T));
    for (std::size_t i = 0; i < out.size(); ++i) {
      unsigned char b[sizeof(T)];
      std::memcpy(b, bytes.data() + i * sizeof(T), sizeof(T));
      if constexpr (std::endian::native == std::endian::little && sizeof(T) > 1)
        for (std::size_t k = 0; k < sizeof(T) / 2; ++k) std::swap(b[k], b[sizeof(T) - 1 - k]);
      std::memcpy(&out[i], b, sizeof(T));
    }
    return out;
  }

 private:
  template <typename T>
  bool type_matches() const {
    switch (type) {
      case IdxType::u8:
        return std::is_same_v<T, std::uint8_t>;
      case IdxType::i8:
        return std::is_same_v<T, std::int8_t>;
      case IdxType::i16:
        return std::is_same_v<T, std::int16_t>;
      case IdxType::i32:
        return std::is_same_v<T, std::int32_t>;
      case IdxType::f32:
        return std::is_same_v<T, float>;
      case IdxType::f64:
        return std::is_same_v<T, double>;
    }
    return false;
  }
};

namespace detail {

/// "[60000, 28, 28]"
inline std::string dims_str(const std::vector<std::int64_t>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

/// Up to `n` leading bytes as text when printable, for messages about what a file really is.
inline std::string printable_prefix(const unsigned char* p, std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n && p[i] >= 0x20 && p[i] < 0x7F; ++i) s += static_cast<char>(p[i]);
  return s;
}

inline std::string hex_bytes(const unsigned char* p, std::size_t n) {
  std::string s;
  char buf[4];
  for (std::size_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%s%02x", i ? " " : "", p[i]);
    s += buf;
  }
  return s;
}

/// True when the bytes look like the start of an HTML or XML page (`<!DOCTYPE`, `<html`, `<?xml`).
inline bool looks_like_html(const unsigned char* p, std::size_t n) {
  std::size_t i = 0;
  while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n')) ++i;
  return i + 1 < n && p[i] == '<' && (p[i + 1] == '!' || p[i + 1] == '?' || std::isalpha(p[i + 1]));
}

/// deflate cannot expand data more than ~1032:1; a header promising more is corrupt.
inline constexpr std::uint64_t kMaxDeflateRatio = 1032;

}  // namespace detail

/// Reads the IDX file at `path` (raw or gzip, detected by content) and checks it against
/// `spec`. Throws FileError if it cannot be read and FormatError, naming the file and
/// what is wrong, if its content is not a well-formed IDX array of exactly the promised size.
inline IdxArray read_idx(const std::filesystem::path& path, const IdxSpec& spec = {}) {
  ContentReader in(path);
  const std::string where = "IDX file '" + path.string() + "'" + (in.compressed() ? " (gzip)" : "");

  // The first bytes, sniffed so the messages can say what the file really is; `take`
  // hands them out again before reading on.
  unsigned char head[16] = {};
  const std::size_t head_len = in.read(head, sizeof head);
  std::size_t head_used = 0;
  const auto take = [&](unsigned char* dst, std::size_t n) -> std::size_t {
    // An empty payload (an extent of 0) has no buffer: dst may be null, which memcpy may
    // not be given even for 0 bytes (found by tests/fuzz/fuzz_idx.cpp under UBSan).
    if (n == 0) return 0;
    const std::size_t from_head = std::min(n, head_len - head_used);
    std::memcpy(dst, head + head_used, from_head);
    head_used += from_head;
    return from_head + (n > from_head ? in.read(dst + from_head, n - from_head) : 0);
  };
  TINYNET_CHECK(FormatError, head_len > 0, where, ": the ", in.compressed() ? "content" : "file", " is empty");
  TINYNET_CHECK(FormatError, !detail::looks_like_html(head, head_len), where,
                ": this is a web page, not IDX data (it starts with \"", detail::printable_prefix(head, head_len),
                "...\"): the download saved an error page");
  TINYNET_CHECK(FormatError, !(head_len >= 2 && head[0] == 0x1F && head[1] == 0x8B), where,
                ": the decompressed content is gzip-compressed again (a .gz inside a .gz): "
                "decompress it once more (gunzip) or download it again");
  TINYNET_CHECK(FormatError, head_len >= 4, where, ": only ", head_len,
                " bytes, too short for the 4-byte IDX magic (a truncated download?)");
  TINYNET_CHECK(FormatError, head[0] == 0 && head[1] == 0, where, ": bad magic number ", detail::hex_bytes(head, 4),
                ": an IDX file starts with 00 00 <type> <ndims>");

  const auto type = static_cast<IdxType>(head[2]);
  TINYNET_CHECK(FormatError, idx_element_size(type) != 0, where, ": unknown element type byte ",
                detail::hex_bytes(head + 2, 1), " in magic ", detail::hex_bytes(head, 4),
                " (IDX types: 08 u8, 09 i8, 0b i16, 0c i32, 0d f32, 0e f64)");
  TINYNET_CHECK(FormatError, !spec.type || *spec.type == type, where, ": element type is ", idx_type_name(type),
                ", expected ", idx_type_name(spec.type.value_or(type)));
  const int rank = head[3];
  head_used = 4;
  TINYNET_CHECK(FormatError, rank > 0, where, ": the header gives 0 dimensions (magic ", detail::hex_bytes(head, 4),
                ")");

  // Dims: at most 255 * 4 bytes, so reading them allocates nothing worth checking.
  std::vector<unsigned char> dim_bytes(static_cast<std::size_t>(rank) * 4);
  const std::size_t dims_len = take(dim_bytes.data(), dim_bytes.size());
  TINYNET_CHECK(FormatError, dims_len == dim_bytes.size(), where, ": the header is cut short: rank ", rank, " needs ",
                dim_bytes.size(), " bytes of dimensions, the file has ", dims_len);
  IdxArray out;
  out.type = type;
  for (int d = 0; d < rank; ++d) {
    const unsigned char* b = dim_bytes.data() + 4 * d;
    out.dims.push_back((std::int64_t{b[0]} << 24) | (std::int64_t{b[1]} << 16) | (std::int64_t{b[2]} << 8) | b[3]);
  }
  const std::string shape = detail::dims_str(out.dims) + " " + idx_type_name(type);
  TINYNET_CHECK(FormatError, spec.rank == 0 || spec.rank == rank, where, ": rank ", rank, " (dims ",
                detail::dims_str(out.dims), "), expected rank ", spec.rank);
  if (!spec.dims.empty()) {
    TINYNET_CHECK(FormatError, spec.dims.size() == out.dims.size(), where, ": dims ", detail::dims_str(out.dims),
                  ", expected ", detail::dims_str(spec.dims));
    for (std::size_t d = 0; d < spec.dims.size(); ++d)
      TINYNET_CHECK(FormatError, spec.dims[d] < 0 || spec.dims[d] == out.dims[d], where, ": dimension ", d, " is ",
                    out.dims[d], ", expected ", spec.dims[d], " (dims ", detail::dims_str(out.dims), ", expected ",
                    detail::dims_str(spec.dims), ")");
  }

  // Payload size, overflow-safe: stop as soon as the product passes what any file could hold.
  constexpr std::uint64_t kLimit = std::numeric_limits<std::int64_t>::max();
  std::uint64_t payload = idx_element_size(type);
  for (std::int64_t d : out.dims) {
    const auto ud = static_cast<std::uint64_t>(d);
    TINYNET_CHECK(FormatError, ud == 0 || payload <= kLimit / ud, where, ": dims ", shape,
                  " describe more than 2^63 bytes: a corrupt header");
    payload *= ud;
  }
  const std::uint64_t header = 4 + 4 * static_cast<std::uint64_t>(rank);
  if (!in.compressed()) {
    const std::uint64_t have = in.file_size() >= header ? in.file_size() - header : 0;
    TINYNET_CHECK(FormatError, have >= payload, where, ": truncated: the header promises ", payload, " data bytes (",
                  shape, ") but the file holds only ", have, " after its ", header,
                  "-byte header (a partial download?)");
    TINYNET_CHECK(FormatError, have <= payload, where, ": ", have - payload, " extra byte(s) after the ", payload,
                  " data bytes the header promises (", shape, "): trailing data or a wrong header");
  } else {
    const std::uint64_t most = in.file_size() * detail::kMaxDeflateRatio;
    TINYNET_CHECK(FormatError, payload <= most, where, ": the header promises ", payload, " data bytes (", shape,
                  "), more than a ", in.file_size(), "-byte gzip file can decompress to (at most ", most,
                  "): a corrupt header or a truncated download");
  }

  out.bytes.resize(static_cast<std::size_t>(payload));
  const std::size_t got = take(out.bytes.data(), out.bytes.size());
  TINYNET_CHECK(FormatError, got == payload, where, ": truncated: the content ends after ", got, " of the ", payload,
                " data bytes the header promises (", shape, ")");
  unsigned char extra[1];
  TINYNET_CHECK(FormatError, take(extra, 1) == 0, where, ": the content goes on past the ", payload,
                " data bytes the header promises (", shape, "): trailing data or a wrong header");
  return out;
}

}  // namespace tinynet::data
