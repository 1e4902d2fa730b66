#pragma once
// Builders for PyTorch state_dict files in the tests: pickles written opcode by opcode
// (independently of the library's PickleWriter) and stored in a zip archive.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tinynet/io/pytorch.hpp>
#include <vector>

#include "io/io_test_support.hpp"

namespace io_test {

/// A pickle, opcode by opcode.
class Pickle {
 public:
  Pickle& op(unsigned char c) {
    b_.push_back(static_cast<std::byte>(c));
    return *this;
  }
  Pickle& raw(std::string_view s) {
    for (char c : s) op(static_cast<unsigned char>(c));
    return *this;
  }
  Pickle& u32(std::uint32_t v) {
    for (int i = 0; i < 4; ++i) op(static_cast<unsigned char>(v >> (8 * i)));
    return *this;
  }
  Pickle& proto() { return op(0x80).op(2); }
  Pickle& str(std::string_view s) { return op('X').u32(static_cast<std::uint32_t>(s.size())).raw(s); }
  Pickle& global(std::string_view module, std::string_view name) {
    return op('c').raw(module).op('\n').raw(name).op('\n');
  }
  /// Any int64 (LONG1 with 8 bytes).
  Pickle& i64(std::int64_t v) {
    op(0x8a).op(8);
    for (int i = 0; i < 8; ++i) op(static_cast<unsigned char>(static_cast<std::uint64_t>(v) >> (8 * i)));
    return *this;
  }
  Pickle& ints(const std::vector<std::int64_t>& v) {
    op('(');
    for (std::int64_t x : v) i64(x);
    return op('t');
  }
  /// An empty OrderedDict (the idiom torch.save writes).
  Pickle& ordered_dict() { return global("collections", "OrderedDict").op(')').op('R'); }
  const Bytes& bytes() const { return b_; }

 private:
  Bytes b_;
};

/// One tensor as torch.save pickles it: _rebuild_tensor_v2(storage, offset, size, stride, False, {}).
struct TensorSpec {
  std::string name = "w";
  std::string storage_type = "FloatStorage";
  std::string key = "0";
  std::int64_t numel = 6;
  std::int64_t offset = 0;
  std::vector<std::int64_t> sizes = {2, 3}, strides = {3, 1};
};

inline Pickle& tensor(Pickle& p, const TensorSpec& t) {
  p.global("torch._utils", "_rebuild_tensor_v2").op('(');
  p.op('(').str("storage").global("torch", t.storage_type).str(t.key).str("cpu").i64(t.numel).op('t').op('Q');
  p.i64(t.offset).ints(t.sizes).ints(t.strides).op(0x89).ordered_dict().op('t').op('R');
  return p;
}

/// A state_dict pickle of `tensors`.
inline Bytes state_dict_pickle(const std::vector<TensorSpec>& tensors) {
  Pickle p;
  p.proto().ordered_dict().op('(');
  for (const TensorSpec& t : tensors) tensor(p.str(t.name), t);
  p.op('u').op('.');
  return p.bytes();
}

/// A torch.save archive "archive/..." holding `pickle` and the storages data/<key>.
inline Bytes archive(const Bytes& pickle, const std::map<std::string, Bytes>& storages) {
  tinynet::io::detail::ZipWriter zip;
  zip.add("archive/data.pkl", pickle);
  for (const auto& [key, data] : storages) zip.add("archive/data/" + key, data);
  zip.add("archive/version", std::as_bytes(std::span(std::string_view("3\n"))));
  return std::move(zip).finish();
}

/// `n` float32 values 0, 1, 2, ... as bytes.
inline Bytes float_storage(std::int64_t n) {
  Bytes b(static_cast<std::size_t>(n) * 4);
  for (std::int64_t i = 0; i < n; ++i) {
    const float f = static_cast<float>(i);
    std::memcpy(b.data() + i * 4, &f, 4);
  }
  return b;
}

}  // namespace io_test
