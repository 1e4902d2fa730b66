#pragma once
// Helpers for the io tests: a scratch directory (tests/temp_dir.hpp), byte-level file builders written
// independently of the library's encoder (so the tests pin the documented layout), and
// a watch on heap and tensor allocations.

#include <zlib.h>

#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <tinynet/io/io.hpp>
#include <tinynet/tinynet.hpp>
#include <vector>

#include "temp_dir.hpp"

namespace io_test {

using Bytes = std::vector<std::byte>;

using TempDir = tinynet::testing::TempDir;

inline Bytes read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Bytes out(chars.size());
  std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

inline void write_bytes(const std::filesystem::path& p, const Bytes& b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

/// Appends little-endian fields, as docs/file-format.md lays them out.
class Builder {
 public:
  Builder& u8(std::uint8_t v) { return raw(&v, 1); }
  Builder& u32(std::uint32_t v) { return le(v); }
  Builder& u64(std::uint64_t v) { return le(v); }
  Builder& i64(std::int64_t v) { return le(static_cast<std::uint64_t>(v)); }
  Builder& str(const std::string& s) { return u64(s.size()).raw(s.data(), s.size()); }
  Builder& raw(const void* p, std::size_t n) {
    const std::size_t at = bytes_.size();
    bytes_.resize(at + n);
    if (n) std::memcpy(bytes_.data() + at, p, n);
    return *this;
  }
  Builder& raw(const Bytes& b) { return raw(b.data(), b.size()); }
  const Bytes& bytes() const { return bytes_; }

 private:
  template <typename U>
  Builder& le(U v) {
    for (std::size_t i = 0; i < sizeof(U); ++i) bytes_.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xFF));
    return *this;
  }
  Bytes bytes_;
};

inline std::uint32_t crc(const std::byte* p, std::size_t n) {
  return static_cast<std::uint32_t>(
      ::crc32(::crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(p), static_cast<uInt>(n)));
}

/// A whole file: header fields as given (checksums computed unless overridden), then `payload`.
struct FileSpec {
  std::uint32_t version = 1;
  std::uint32_t kind = 1;
  std::uint64_t payload_length = UINT64_MAX;  // UINT64_MAX: the payload's real length
};

inline Bytes make_file(const Bytes& payload, FileSpec spec = {}) {
  Builder h;
  h.raw("TINYNET\0", 8).u32(spec.version).u32(spec.kind);
  h.u64(spec.payload_length == UINT64_MAX ? payload.size() : spec.payload_length);
  h.u32(crc(payload.data(), payload.size()));
  const Bytes first28 = h.bytes();
  h.u32(crc(first28.data(), first28.size()));
  h.raw(payload);
  return h.bytes();
}

/// Payload start: the little-endian flag and the entry count.
inline Builder payload(std::uint64_t entries) {
  Builder b;
  b.u8(1).u64(entries);
  return b;
}

/// One well-formed float32 entry of shape [n] holding 0, 1, ..., n-1.
inline Builder& float_entry(Builder& b, const std::string& name, std::int64_t n) {
  b.str(name).u8(1).u8(1).i64(n).u64(static_cast<std::uint64_t>(n) * 4);
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = static_cast<float>(i);
    b.raw(&v, 4);
  }
  return b;
}

/// Recomputes both checksums of a file image in place (for payload-level corruption).
inline void fix_checksums(Bytes& f) {
  if (f.size() < 32) return;
  const std::uint32_t pc = crc(f.data() + 32, f.size() - 32);
  for (int i = 0; i < 4; ++i) f[24 + i] = static_cast<std::byte>((pc >> (8 * i)) & 0xFF);
  const std::uint32_t hc = crc(f.data(), 28);
  for (int i = 0; i < 4; ++i) f[28 + i] = static_cast<std::byte>((hc >> (8 * i)) & 0xFF);
}

/// The same bits (memcmp), shape and dtype.
inline bool bitwise_equal(const tinynet::Tensor& a, const tinynet::Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

inline bool bitwise_equal(const tinynet::StateDict& a, const tinynet::StateDict& b) {
  if (a.size() != b.size()) return false;
  auto ib = b.begin();
  for (auto ia = a.begin(); ia != a.end(); ++ia, ++ib)
    if (ia->first != ib->first || !bitwise_equal(ia->second, ib->second)) return false;
  return true;
}

/// Matches an exception whose what() contains `part`; combine with && and !.
class MessageContains : public Catch::MatcherBase<std::exception> {
 public:
  explicit MessageContains(std::string part) : part_(std::move(part)) {}
  bool match(const std::exception& e) const override {
    return std::string_view(e.what()).find(part_) != std::string::npos;
  }
  std::string describe() const override { return "has a message containing \"" + part_ + "\""; }

 private:
  std::string part_;
};
inline MessageContains Says(std::string part) { return MessageContains(std::move(part)); }

/// Largest single heap allocation (operator new) and tensor-allocator traffic while alive.
/// The counting operator new lives in test_allocation_bound.cpp.
class AllocationWatch {
 public:
  AllocationWatch();
  ~AllocationWatch();
  AllocationWatch(const AllocationWatch&) = delete;
  AllocationWatch& operator=(const AllocationWatch&) = delete;
  /// Largest operator-new request since construction.
  std::size_t largest_new() const;
  /// Tensor allocations (allocate() calls) since construction.
  std::uint64_t tensor_requests() const { return tinynet::cpu_allocator().stats().requests - start_.requests; }
  /// Bytes the tensor allocator took from the system since construction.
  std::uint64_t tensor_system_bytes() const {
    return tinynet::cpu_allocator().stats().system_bytes - start_.system_bytes;
  }

 private:
  tinynet::AllocatorStats start_;
};

}  // namespace io_test
