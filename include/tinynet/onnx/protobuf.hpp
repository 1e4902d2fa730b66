#pragma once
/// \file
/// The protocol-buffers wire format, write side only: what the ONNX exporter needs to
/// encode a ModelProto. Fields are written in the order they are added; nested messages
/// are encoded first and added as length-delimited bytes.
///
/// Why not Debian's libprotobuf with onnx.proto (libonnx-dev)? Its generated code must be
/// compiled and linked, which a header-only library cannot ship without a compiled
/// target; the exporter writes a handful of message types, and its output is checked by
/// the onnx package's own parser and checker in the tests (tests/interop).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

namespace tinynet::onnx::detail {

class ProtoWriter {
 public:
  /// int32, int64, enum and bool fields (wire type 0); negative values take ten bytes.
  ProtoWriter& integer(int field, std::int64_t v) {
    tag(field, 0);
    varint(static_cast<std::uint64_t>(v));
    return *this;
  }
  /// float fields (wire type 5, little-endian IEEE 754).
  ProtoWriter& float32(int field, float v) {
    tag(field, 5);
    std::uint32_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<std::byte>(bits >> (8 * i)));
    return *this;
  }
  /// bytes and string fields, and nested messages (wire type 2).
  ProtoWriter& bytes(int field, std::span<const std::byte> b) {
    tag(field, 2);
    varint(b.size());
    out_.insert(out_.end(), b.begin(), b.end());
    return *this;
  }
  ProtoWriter& string(int field, std::string_view s) { return bytes(field, std::as_bytes(std::span(s))); }
  ProtoWriter& message(int field, const ProtoWriter& m) { return bytes(field, m.out_); }
  /// Appends fields already encoded for the same message.
  ProtoWriter& append(const ProtoWriter& fields) {
    out_.insert(out_.end(), fields.out_.begin(), fields.out_.end());
    return *this;
  }

  const std::vector<std::byte>& data() const { return out_; }
  std::vector<std::byte> take() && { return std::move(out_); }

 private:
  void tag(int field, int wire_type) {
    varint((static_cast<std::uint64_t>(field) << 3) | static_cast<unsigned>(wire_type));
  }
  void varint(std::uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<std::byte>((v & 0x7F) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<std::byte>(v));
  }

  std::vector<std::byte> out_;
};

}  // namespace tinynet::onnx::detail
