#pragma once
/// \file
/// PyTorch state_dict files: what torch.save(model.state_dict(), path) writes (PyTorch 1.6
/// to 2.x: a zip archive with `<name>/data.pkl`, storages in `<name>/data/<key>`,
/// `<name>/version` and, since 2.0, `<name>/byteorder`), read and written.
///
/// Reading runs the restricted unpickler of io/pickle.hpp (the stance of
/// torch.load(weights_only=True): a global other than the few a state_dict needs is
/// refused by name, and nothing is executed), then checks every storage, size, stride and
/// offset against the archive before a tensor is allocated. The tensors together never
/// hold more bytes than the file. float32, float64, int32, int64 and bfloat16 tensors are
/// read (bfloat16 bit for bit).
///
/// Writing produces what torch.save writes (pickle protocol 2, stored zip entries aligned
/// to 64 bytes), so torch.load(path, weights_only=True) reads it.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tinynet/core/state_dict.hpp"
#include "tinynet/io/error.hpp"
#include "tinynet/io/file.hpp"
#include "tinynet/io/pickle.hpp"
#include "tinynet/io/state_dict_file.hpp"
#include "tinynet/io/zip.hpp"

namespace tinynet {

namespace io::detail {

/// The dtype of a PyTorch storage class, or a FormatError naming the class.
inline DType dtype_of_storage(const std::string& type, const std::string& entry, std::string_view source) {
  if (type == "FloatStorage") return DType::float32;
  if (type == "DoubleStorage") return DType::float64;
  if (type == "IntStorage") return DType::int32;
  if (type == "LongStorage") return DType::int64;
  if (type == "BFloat16Storage") return DType::bfloat16;
  fail_format(source, "entry '", entry, "' is stored as torch.", type,
              ", which tinynet does not read (it reads float32, float64, int32, int64 and bfloat16 tensors)");
}

/// a * b, or false when it overflows int64.
inline bool mul_ok(std::int64_t a, std::int64_t b, std::int64_t& out) { return !__builtin_mul_overflow(a, b, &out); }

/// The archive's entries by name, and the prefix of its records ("archive" in "archive/data.pkl").
struct PyTorchArchive {
  std::span<const std::byte> bytes;
  std::string prefix;
  std::unordered_map<std::string, ZipEntry> entries;
};

inline PyTorchArchive open_pytorch_archive(std::span<const std::byte> bytes, std::string_view source) {
  static constexpr unsigned char kLegacyMagic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20};
  if (bytes.size() >= sizeof kLegacyMagic && std::memcmp(bytes.data(), kLegacyMagic, sizeof kLegacyMagic) == 0)
    fail_format(source,
                "is in PyTorch's legacy (before 1.6) format, which tinynet does not read: load it in PyTorch "
                "and save it again with torch.save's default (zip) format");
  if (bytes.size() >= kMagic.size() && std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) == 0)
    fail_format(source, "is a tinynet file, not a PyTorch one: read it with load / load_state_dict_file");
  if (!looks_like_zip(bytes))
    fail_format(source,
                "not a PyTorch state_dict file (torch.save writes a zip archive, starting with \"PK\"; this "
                "starts with bytes ",
                hex_bytes(bytes.first(std::min<std::size_t>(bytes.size(), 4))), ")");
  PyTorchArchive a{bytes, {}, {}};
  for (ZipEntry& e : read_zip_directory(bytes, source)) {
    const std::size_t slash = e.name.find('/');
    if (slash != std::string::npos && e.name.compare(slash, std::string::npos, "/data.pkl") == 0) {
      if (!a.prefix.empty())
        fail_format(source, "the archive holds two pickles ('", a.prefix, "/data.pkl' and '", e.name, "')");
      a.prefix = e.name.substr(0, slash);
    }
    a.entries.emplace(e.name, std::move(e));
  }
  if (a.prefix.empty()) fail_format(source, "the zip archive has no <name>/data.pkl: not a torch.save file");
  if (const auto it = a.entries.find(a.prefix + "/byteorder"); it != a.entries.end()) {
    const auto b = zip_entry_bytes(bytes, it->second, source);
    if (std::string_view(reinterpret_cast<const char*>(b.data()), b.size()) != "little")
      fail_format(source, "storages are not little-endian (byteorder '",
                  std::string_view(reinterpret_cast<const char*>(b.data()), std::min<std::size_t>(b.size(), 16)),
                  "'); tinynet reads little-endian files");
  }
  return a;
}

/// A checked view of a storage: what a tensor will be copied from.
struct TensorPlan {
  DType dtype = DType::float32;
  Shape shape;
  std::int64_t numel = 0, offset = 0;
  std::vector<std::int64_t> strides;
  std::span<const std::byte> storage;
};

/// Checks the tensor `t` (named `name`): its storage against the archive entry, and the
/// view (offset, sizes, strides) against the storage. Allocates nothing sized by the file.
inline TensorPlan plan_tensor(const PyTorchArchive& a, const PickledTensor& t, const std::string& name,
                              std::unordered_map<std::string, std::span<const std::byte>>& checked,
                              std::string_view source) {
  const auto bad = [&](auto&&... parts) { fail_format(source, "entry '", name, "': ", parts...); };
  const PickledStorage& s = *t.storage;
  TensorPlan plan{dtype_of_storage(s.type, name, source), {}, 1, t.offset, t.strides, {}};
  const auto elsize = static_cast<std::int64_t>(element_size(plan.dtype));
  const auto entry = a.entries.find(a.prefix + "/data/" + s.key);
  if (entry == a.entries.end())
    bad("its storage '", s.key, "' is not in the archive (no ", a.prefix, "/data/", s.key, ")");
  auto [at, fresh] = checked.try_emplace(s.key);
  if (fresh) at->second = zip_entry_bytes(a.bytes, entry->second, source);
  plan.storage = at->second;

  std::int64_t storage_bytes = 0;
  if (s.numel < 0 || !mul_ok(s.numel, elsize, storage_bytes) ||
      static_cast<std::uint64_t>(storage_bytes) > plan.storage.size())
    bad("storage '", s.key, "' declares ", s.numel, " elements of ", elsize, " bytes, its entry holds ",
        plan.storage.size(), " bytes");
  if (t.sizes.size() != t.strides.size()) bad(t.sizes.size(), " sizes but ", t.strides.size(), " strides");
  if (t.sizes.size() > static_cast<std::size_t>(Shape::kMaxRank))
    bad("rank ", t.sizes.size(), " (tinynet tensors have at most ", Shape::kMaxRank, " dimensions)");
  if (t.offset < 0) bad("negative storage offset ", t.offset);
  for (std::size_t d = 0; d < t.sizes.size(); ++d) {
    if (t.sizes[d] < 0) bad("negative size ", t.sizes[d], " in dimension ", d);
    if (t.strides[d] < 0) bad("negative stride ", t.strides[d], " in dimension ", d);
    if (!mul_ok(plan.numel, t.sizes[d], plan.numel)) bad("its sizes overflow 64 bits");
    plan.shape.push_back(t.sizes[d]);
  }
  std::int64_t nbytes = 0;
  if (!mul_ok(plan.numel, elsize, nbytes) || static_cast<std::uint64_t>(nbytes) > a.bytes.size())
    bad(plan.numel, " elements, more than the ", a.bytes.size(), "-byte file can hold");
  if (plan.numel > 0) {
    std::int64_t last = t.offset;  // the highest element index the view reads
    for (std::size_t d = 0; d < t.sizes.size(); ++d) {
      std::int64_t reach = 0;
      if (!mul_ok(t.sizes[d] - 1, t.strides[d], reach) || __builtin_add_overflow(last, reach, &last))
        bad("its strides and offset overflow 64 bits");
    }
    if (last >= s.numel)
      bad("the view (offset ", t.offset, ", sizes and strides) reads element ", last, " of storage '", s.key,
          "', which has ", s.numel, " elements: the storage is shorter than its tensor");
  }
  return plan;
}

/// The tensor `plan` describes, copied out of its storage in row-major order.
inline Tensor copy_tensor(const TensorPlan& plan) {
  Tensor out(plan.shape, {plan.dtype, Device::cpu(), false});
  auto* dst = static_cast<std::byte*>(out.raw_data());
  const auto elsize = static_cast<std::int64_t>(element_size(plan.dtype));
  const int rank = plan.shape.rank();
  // Runs along a unit-stride last dimension are copied at once.
  const std::int64_t run = rank > 0 && plan.strides.back() == 1 ? plan.shape.size(rank - 1) : 1;
  std::vector<std::int64_t> index(static_cast<std::size_t>(rank), 0);
  for (std::int64_t done = 0; done < plan.numel; done += run) {
    std::int64_t src = plan.offset;
    for (int d = 0; d < rank; ++d) src += index[d] * plan.strides[d];
    std::memcpy(dst + done * elsize, plan.storage.data() + src * elsize, static_cast<std::size_t>(run * elsize));
    for (int d = rank - (run > 1 ? 2 : 1); d >= 0; --d) {
      if (++index[d] < plan.shape.size(d)) break;
      index[d] = 0;
    }
  }
  return out;
}

inline StateDict decode_pytorch(std::span<const std::byte> bytes, std::string_view source) {
  const PyTorchArchive a = open_pytorch_archive(bytes, source);
  const auto pkl = zip_entry_bytes(bytes, a.entries.at(a.prefix + "/data.pkl"), source);
  Unpickler unpickler(pkl, source);
  const PyValue& top = unpickler.load();
  if (top.kind != PyValue::Kind::dict) fail_format(source, "data.pkl does not hold a state_dict (a dict of tensors)");
  // Every entry is checked before the first tensor is allocated.
  std::vector<std::pair<std::string, TensorPlan>> plans;
  std::unordered_map<std::string, std::span<const std::byte>> checked;
  std::unordered_set<std::string> seen;
  std::uint64_t total = 0;
  for (std::size_t i = 0; i + 1 < top.items.size(); i += 2) {
    const PyValue& key = *top.items[i];
    const PyValue& value = *top.items[i + 1];
    if (key.kind != PyValue::Kind::string) fail_format(source, "the state_dict has a key that is not a string");
    if (value.kind != PyValue::Kind::tensor)
      fail_format(source, "entry '", key.text, "' is not a tensor (only state_dicts of tensors are read)");
    if (!seen.insert(key.text).second) fail_format(source, "entry '", key.text, "' appears twice");
    TensorPlan plan = plan_tensor(a, *value.tensor, key.text, checked, source);
    total += static_cast<std::uint64_t>(plan.numel) * element_size(plan.dtype);
    if (total > bytes.size())
      fail_format(source, "the tensors would hold ", total, " bytes, more than the ", bytes.size(),
                  "-byte file (views that repeat their storage are not read)");
    plans.emplace_back(key.text, std::move(plan));
  }
  StateDict sd;
  for (const auto& [name, plan] : plans) sd.insert(name, copy_tensor(plan));
  return sd;
}

/// The storage class torch.save names for `dtype`.
inline const char* storage_class(DType dtype) {
  switch (dtype) {
    case DType::float32:
      return "FloatStorage";
    case DType::float64:
      return "DoubleStorage";
    case DType::int32:
      return "IntStorage";
    case DType::int64:
      return "LongStorage";
    case DType::bfloat16:
      return "BFloat16Storage";
    case DType::bool_:
      return "BoolStorage";
  }
  return "?";
}

inline std::vector<std::byte> encode_pytorch(const StateDict& sd) {
  constexpr std::string_view kPrefix = "archive";
  PickleWriter p;
  p.proto();
  p.global("collections", "OrderedDict");
  p.empty_tuple();
  p.reduce();
  p.mark();
  std::vector<Tensor> storages;
  for (const auto& [name, tensor] : sd) {
    const Tensor t = tensor.device().is_cpu() ? tensor : tensor.to(Device::cpu());
    p.string(name);
    p.global("torch._utils", "_rebuild_tensor_v2");
    p.mark();
    p.mark();  // the persistent id of the storage
    p.string("storage");
    p.global("torch", storage_class(t.dtype()));
    p.string(std::to_string(storages.size()));
    p.string("cpu");
    p.integer(t.numel());
    p.tuple();
    p.binpersid();
    p.integer(0);
    p.mark();
    for (int d = 0; d < t.dim(); ++d) p.integer(t.size(d));
    p.tuple();
    p.mark();
    std::int64_t stride = 1;
    std::vector<std::int64_t> strides(static_cast<std::size_t>(t.dim()));
    for (int d = t.dim() - 1; d >= 0; --d) strides[static_cast<std::size_t>(d)] = stride, stride *= t.size(d);
    for (std::int64_t s : strides) p.integer(s);
    p.tuple();
    p.boolean(false);
    p.global("collections", "OrderedDict");  // backward hooks: none
    p.empty_tuple();
    p.reduce();
    p.tuple();
    p.reduce();
    storages.push_back(t);
  }
  p.setitems();
  p.stop();

  ZipWriter zip;
  const std::string prefix(kPrefix);
  zip.add(prefix + "/data.pkl", std::move(p).take());
  zip.add(prefix + "/byteorder", std::as_bytes(std::span(std::string_view("little"))));
  for (std::size_t i = 0; i < storages.size(); ++i)
    zip.add(prefix + "/data/" + std::to_string(i),
            std::span(static_cast<const std::byte*>(storages[i].raw_data()), storages[i].nbytes()));
  zip.add(prefix + "/version", std::as_bytes(std::span(std::string_view("3\n"))));
  return std::move(zip).finish();
}

/// The whole file at `path`, read into memory (it is as large as the file, no larger).
inline std::vector<std::byte> read_whole_file(const std::filesystem::path& path, std::string_view op) {
  OpenedFile f = open_for_reading(path, op);
  std::vector<std::byte> bytes(static_cast<std::size_t>(f.size));
  const std::ptrdiff_t n = read_all(f.fd.get(), bytes.data(), bytes.size());
  if (n < 0) fail_file(op, "cannot read", path, static_cast<int>(-n));
  if (static_cast<std::uint64_t>(n) != f.size)
    fail_format(file_source(op, path), "truncated file: it shrank while being read");
  return bytes;
}

}  // namespace io::detail

/// Reads the PyTorch state_dict file at `path` (what torch.save(model.state_dict(), path)
/// writes), with PyTorch's names. Throws FileError when the file cannot be read and
/// FormatError, naming the file and the problem, for anything that is not a state_dict of
/// float32, float64, int32, int64 or bfloat16 tensors (a refused global is named in the message).
inline StateDict load_pytorch_state_dict(const std::filesystem::path& path) {
  return io::detail::decode_pytorch(io::detail::read_whole_file(path, "load_pytorch_state_dict"),
                                    io::detail::file_source("load_pytorch_state_dict", path));
}

/// As load_pytorch_state_dict, from a file image in memory; `source` names it in messages.
inline StateDict load_pytorch_state_dict_from_bytes(std::span<const std::byte> bytes,
                                                    std::string_view source = "<memory>") {
  return io::detail::decode_pytorch(bytes, tinynet::detail::concat("load_pytorch_state_dict_from_bytes: ", source));
}

/// The file image of `sd` as torch.save would write it (see save_pytorch_state_dict).
inline std::vector<std::byte> save_pytorch_state_dict_to_bytes(const StateDict& sd) {
  return io::detail::encode_pytorch(sd);
}

/// Writes `sd` to `path` as a PyTorch state_dict file that torch.load(path,
/// weights_only=True) reads, under the names `sd` has. Atomic, as save_state_dict.
inline void save_pytorch_state_dict(const StateDict& sd, const std::filesystem::path& path) {
  io::detail::write_file_atomic(path, io::detail::encode_pytorch(sd), "save_pytorch_state_dict");
}

/// Whether the file at `path` is a PyTorch (zip) file rather than a tinynet one, judged by
/// its first bytes. Throws FileError when it cannot be read.
inline bool is_pytorch_file(const std::filesystem::path& path) {
  io::detail::OpenedFile f = io::detail::open_for_reading(path, "is_pytorch_file");
  std::byte head[4];
  const std::ptrdiff_t n = io::detail::read_all(f.fd.get(), head, sizeof head);
  return n == sizeof head && io::detail::looks_like_zip(head);
}

}  // namespace tinynet
