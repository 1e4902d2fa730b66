// libFuzzer target for the PyTorch state_dict reader (io/pytorch.hpp). Each input is tried
// twice: as a whole file, and as the data.pkl of an otherwise valid archive (so mutations
// reach the unpickler rather than stopping at the zip CRC), with storages "0" and "1" of
// 64 bytes. The only acceptable failure is a tinynet::FormatError; anything else (another
// exception, a crash, a sanitizer report, an allocation above -malloc_limit_mb) is a
// finding. Built and run by tests/fuzz/run_fuzz.cmake (CTest io.fuzz_pytorch), as fuzz_load is.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <tinynet/io/pytorch.hpp>
#include <vector>

namespace {

// Invariants of a successful load: the tensors hold no more bytes than the file, and
// writing them and reading them back gives the same entries, bit for bit.
void check_loaded(const tinynet::StateDict& sd, std::size_t file_size) {
  std::uint64_t data_bytes = 0;
  for (const auto& [name, t] : sd) data_bytes += t.nbytes();
  if (data_bytes > file_size) __builtin_trap();
  const tinynet::StateDict again =
      tinynet::load_pytorch_state_dict_from_bytes(tinynet::save_pytorch_state_dict_to_bytes(sd), "rewritten");
  if (again.size() != sd.size()) __builtin_trap();
  auto it = again.begin();
  for (const auto& [name, t] : sd) {
    const auto& [name2, t2] = *it++;
    if (name != name2 || t.dtype() != t2.dtype() || !(t.shape() == t2.shape()) ||
        std::memcmp(t.raw_data(), t2.raw_data(), t.nbytes()) != 0)
      __builtin_trap();
  }
}

void try_load(std::span<const std::byte> bytes) {
  try {
    check_loaded(tinynet::load_pytorch_state_dict_from_bytes(bytes, "fuzz input"), bytes.size());
  } catch (const tinynet::FormatError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try_load(bytes);
  tinynet::io::detail::ZipWriter zip;
  zip.add("archive/data.pkl", bytes);
  std::byte storage[64];
  for (std::size_t i = 0; i < sizeof storage; ++i) storage[i] = static_cast<std::byte>(i);
  zip.add("archive/data/0", storage);
  zip.add("archive/data/1", storage);
  try_load(std::move(zip).finish());
  return 0;
}
