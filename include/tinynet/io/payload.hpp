#pragma once
/// \file
/// The payload of tinynet files: the entries of a StateDict in a cereal portable binary
/// archive, little-endian.
///
///   uint8   1 (cereal's portable-archive flag: the data is little-endian)
///   uint64  entry count
///   per entry, in the StateDict's order:
///     uint64  name length n, then n bytes of name
///     uint8   dtype code: 1 float32, 2 float64, 3 int32, 4 int64, 5 bfloat16 (its bits
///             as a little-endian uint16; files without bfloat16 read as before)
///     uint8   rank r, 0..6
///     int64   r extents, each >= 0
///     uint64  data length in bytes = product of extents * element size
///     bytes   the elements, row-major, little-endian
///
/// The uint64 lengths sit where cereal puts its size tags (with cereal's default
/// CEREAL_SIZE_TYPE), but they are written and read as plain uint64 values, and the
/// reader never hands one to cereal: cereal resizes a container to its length prefix
/// before reading (cereal#103), so a hostile prefix would be an allocation of any size.
/// Instead the reader checks every length, and every product of extents, against the
/// bytes that remain, and only then allocates and lets cereal fill the memory.

#include <cereal/archives/portable_binary.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <istream>
#include <limits>
#include <optional>
#include <ostream>
#include <span>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

#include "tinynet/core/state_dict.hpp"
#include "tinynet/io/error.hpp"

namespace tinynet::io::detail {

/// dtype codes in files. Fixed here, independent of the DType enum's values; 0 is not a
/// dtype, so zeroed bytes are caught.
inline std::uint8_t dtype_code(DType t) {
  switch (t) {
    case DType::float32:
      return 1;
    case DType::float64:
      return 2;
    case DType::int32:
      return 3;
    case DType::int64:
      return 4;
    case DType::bfloat16:
      return 5;
    case DType::bool_:  // comparison results, never state
      break;
  }
  throw TypeError(tinynet::detail::concat("tinynet files: ", t, " tensors are not saved"));
}

inline std::optional<DType> dtype_from_code(std::uint8_t code) {
  switch (code) {
    case 1:
      return DType::float32;
    case 2:
      return DType::float64;
    case 3:
      return DType::int32;
    case 4:
      return DType::int64;
    case 5:
      return DType::bfloat16;
    default:
      return std::nullopt;
  }
}

/// A streambuf appending to a byte vector (cereal writes through a std::ostream).
class ByteSink final : public std::streambuf {
 public:
  explicit ByteSink(std::vector<std::byte>& out) : out_(out) {}

 protected:
  int_type overflow(int_type c) override {
    if (!traits_type::eq_int_type(c, traits_type::eof())) out_.push_back(static_cast<std::byte>(c));
    return traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    const auto* b = reinterpret_cast<const std::byte*>(s);
    out_.insert(out_.end(), b, b + n);
    return n;
  }

 private:
  std::vector<std::byte>& out_;
};

/// A read-only streambuf over a byte span that knows how much is left.
class ByteSource final : public std::streambuf {
 public:
  explicit ByteSource(std::span<const std::byte> bytes) {
    // streambuf's get area is char*, but nothing here writes through it.
    char* p = const_cast<char*>(reinterpret_cast<const char*>(bytes.data()));
    setg(p, p, p + bytes.size());
  }
  std::uint64_t remaining() const { return static_cast<std::uint64_t>(egptr() - gptr()); }
};

/// Bytes the payload of `sd` takes (to reserve once).
inline std::size_t encoded_payload_size(const StateDict& sd) {
  std::size_t n = 1 + 8;
  for (const auto& [name, t] : sd) n += 8 + name.size() + 2 + 8 * static_cast<std::size_t>(t.dim()) + 8 + t.nbytes();
  return n;
}

/// Appends the payload bytes of `sd` to `out`. Tensors on a device are copied to the host first.
inline void encode_payload(const StateDict& sd, std::vector<std::byte>& out) {
  for (const auto& [name, t] : sd)
    TINYNET_CHECK(ValueError, t.defined(), "save: state_dict entry '", name, "' is an undefined tensor");
  out.reserve(out.size() + encoded_payload_size(sd));
  ByteSink sink(out);
  std::ostream os(&sink);
  {
    cereal::PortableBinaryOutputArchive ar(os, cereal::PortableBinaryOutputArchive::Options::LittleEndian());
    ar(static_cast<std::uint64_t>(sd.size()));
    for (const auto& [name, tensor] : sd) {
      const Tensor t = tensor.device().is_cpu() ? tensor : tensor.to(Device::cpu());
      ar(static_cast<std::uint64_t>(name.size()));
      ar(cereal::binary_data(name.data(), name.size()));
      ar(dtype_code(t.dtype()), static_cast<std::uint8_t>(t.dim()));
      for (std::int64_t d : t.shape()) ar(d);
      ar(static_cast<std::uint64_t>(t.nbytes()));
      dispatch_all(t.dtype(), [&]<typename T>() { ar(cereal::binary_data(t.data<T>(), t.nbytes())); });
    }
  }
  TINYNET_CHECK(Error, os.good(), "save: serializing the state_dict failed");
}

/// Reads a payload through cereal, checking each length against what remains before
/// anything is sized from it. Errors are FormatError prefixed with the source.
class PayloadReader {
 public:
  /// `payload` must start with the little-endian flag (checked by decode_payload).
  PayloadReader(std::span<const std::byte> payload, std::string_view source)
      : source_(source),
        buf_(payload),
        is_(&buf_),
        // The option names the endianness to load *into*: the host's. cereal swaps when the
        // stream's flag (little) differs from it.
        ar_(is_, cereal::PortableBinaryInputArchive::Options::Default()) {}

  std::uint64_t remaining() const { return buf_.remaining(); }

  template <typename... Parts>
  [[noreturn]] void fail(Parts&&... parts) const {
    fail_format(source_, std::forward<Parts>(parts)...);
  }

  /// Throws unless `n` more bytes remain.
  template <typename... What>
  void need(std::uint64_t n, What&&... what) const {
    if (n > remaining())
      fail("truncated payload: ", std::forward<What>(what)..., " needs ", n, " bytes, ", remaining(), " remain");
  }

  template <typename T, typename... What>
  T scalar(What&&... what) {
    need(sizeof(T), std::forward<What>(what)...);
    T v{};
    ar_(v);
    return v;
  }

  /// Fills `n` bytes at `dst` (already checked to remain), swapping per element of T.
  template <typename T>
  void bytes(T* dst, std::uint64_t n) {
    ar_(cereal::binary_data(dst, static_cast<std::size_t>(n)));
  }

 private:
  std::string_view source_;
  ByteSource buf_;
  std::istream is_;
  cereal::PortableBinaryInputArchive ar_;
};

/// `name` for a message: non-printable bytes as \xNN, cut after 80 characters.
inline std::string printable(std::string_view name) {
  std::string s;
  for (char c : name) {
    if (s.size() >= 80) return s + "...";
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7F && c != '\\') {
      s += c;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      s += buf;
    }
  }
  return s;
}

/// Smallest encoding of one entry: name length, dtype, rank, data length.
inline constexpr std::uint64_t kMinEntryBytes = 8 + 1 + 1 + 8;

/// Decodes one entry; `index` numbers it in messages until its name is known.
inline std::pair<std::string, Tensor> decode_entry(PayloadReader& r, std::uint64_t index) {
  const auto name_len = r.scalar<std::uint64_t>("entry #", index, "'s name length");
  if (name_len > r.remaining())
    r.fail("entry #", index, " claims a name of ", name_len, " bytes, but only ", r.remaining(),
           " bytes remain in the payload");
  std::string name(static_cast<std::size_t>(name_len), '\0');
  r.bytes(name.data(), name_len);
  const std::string shown = printable(name);

  const auto code = r.scalar<std::uint8_t>("entry '", shown, "''s dtype");
  const std::optional<DType> dtype = dtype_from_code(code);
  if (!dtype)
    r.fail("entry '", shown, "' has unknown dtype code ", +code,
           " (1 float32, 2 float64, 3 int32, 4 int64, 5 bfloat16)");
  const auto rank = r.scalar<std::uint8_t>("entry '", shown, "''s rank");
  if (rank > Shape::kMaxRank)
    r.fail("entry '", shown, "' has rank ", +rank, ", more than the maximum of ", Shape::kMaxRank);

  Shape shape;
  // Product of the non-zero extents must fit int64 (Shape::numel multiplies them in order).
  std::uint64_t nonzero_product = 1;
  bool has_zero = false;
  for (int d = 0; d < rank; ++d) {
    const auto extent = r.scalar<std::int64_t>("entry '", shown, "''s extent ", d);
    if (extent < 0) r.fail("entry '", shown, "' has negative extent ", extent, " in dimension ", d);
    if (extent == 0) {
      has_zero = true;
    } else {
      const auto e = static_cast<std::uint64_t>(extent);
      if (nonzero_product > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) / e)
        r.fail("entry '", shown, "' has extents whose product overflows 64 bits (dimension ", d, " is ", extent, ")");
      nonzero_product *= e;
    }
    shape.push_back(extent);
  }

  const auto data_len = r.scalar<std::uint64_t>("entry '", shown, "''s data length");
  const std::uint64_t elem = element_size(*dtype);
  const std::uint64_t numel = has_zero ? 0 : nonzero_product;
  // Compare element counts, not byte counts, so that nothing overflows.
  if (numel > r.remaining() / elem)
    r.fail("entry '", shown, "' has shape ", shape, " (", numel, " ", dtype_name(*dtype), " elements), more than the ",
           r.remaining(), " bytes that remain in the payload");
  if (data_len != numel * elem)
    r.fail("entry '", shown, "' records ", data_len, " data bytes, but shape ", shape, " of ", dtype_name(*dtype),
           " needs ", numel * elem);

  Tensor t(shape, {*dtype, Device::cpu(), false});
  dispatch_all(*dtype, [&]<typename T>() { r.bytes(t.data<T>(), data_len); });
  return {std::move(name), std::move(t)};
}

/// The StateDict in `payload`. Throws FormatError prefixed with `source` for anything
/// malformed; allocates only after a size has been checked against the bytes that remain.
inline StateDict decode_payload(std::span<const std::byte> payload, std::string_view source) {
  if (payload.empty()) fail_format(source, "truncated payload: empty (it starts with a 1-byte endianness flag)");
  if (payload[0] != std::byte{1})
    fail_format(source, "payload endianness flag is ", std::to_integer<unsigned>(payload[0]),
                ", expected 1 (little-endian)");
  try {
    PayloadReader r(payload, source);
    const auto count = r.scalar<std::uint64_t>("the entry count");
    if (count > r.remaining() / kMinEntryBytes)
      r.fail("the payload claims ", count, " entries, but its ", r.remaining(), " remaining bytes hold at most ",
             r.remaining() / kMinEntryBytes);
    StateDict sd;
    for (std::uint64_t i = 0; i < count; ++i) {
      auto [name, t] = decode_entry(r, i);
      if (sd.contains(name)) r.fail("duplicate entry '", printable(name), "'");
      sd.insert(std::move(name), std::move(t));
    }
    if (r.remaining() != 0) r.fail(r.remaining(), " unexpected bytes after the last of ", count, " entries");
    return sd;
  } catch (const cereal::Exception& e) {
    // Unreachable when the checks above are complete; kept so that a gap is still a FormatError.
    fail_format(source, "malformed payload (", e.what(), ")");
  }
}

}  // namespace tinynet::io::detail
