// libFuzzer target for the loaders: arbitrary bytes go to load_state_dict_from_bytes and
// load_checkpoint_from_bytes; the only acceptable failure is a tinynet::FormatError.
// Anything else (another exception, a crash, a sanitizer report, an allocation above
// -malloc_limit_mb) is a finding. Built and run by tests/fuzz/run_fuzz.cmake (CTest io.fuzz_load):
//   clang++ -fsanitize=fuzzer,address,undefined ... ; fuzz_load -max_total_time=20 corpus/
//
// Each input is tried twice: as given (header, lengths, checksums), and with the header's
// payload length and both checksums recomputed, so that mutations also reach the payload
// decoder instead of stopping at the checksum.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <tinynet/io/io.hpp>
#include <vector>

namespace {

using tinynet::io::detail::kHeaderSize;

// Invariants of a successful load: the tensors hold no more bytes than the input, and the
// format has a single encoding, so encoding what was decoded gives back the input.
void check_decoded(const tinynet::StateDict& sd, tinynet::FileKind kind, std::span<const std::byte> input) {
  std::uint64_t data_bytes = 0;
  for (const auto& [name, t] : sd) data_bytes += t.nbytes();
  if (data_bytes > input.size()) __builtin_trap();
  const std::vector<std::byte> again = tinynet::save_state_dict_to_bytes(sd, kind);
  if (again.size() != input.size() || std::memcmp(again.data(), input.data(), input.size()) != 0) __builtin_trap();
}

void try_load(std::span<const std::byte> bytes) {
  try {
    const tinynet::StateDict sd = tinynet::load_state_dict_from_bytes(bytes, "fuzz input");
    const auto kind = static_cast<tinynet::FileKind>(tinynet::io::detail::get_le<std::uint32_t>(bytes.data() + 12));
    check_decoded(sd, kind, bytes);
  } catch (const tinynet::FormatError&) {
  }
  try {
    const tinynet::Checkpoint c = tinynet::load_checkpoint_from_bytes(bytes, "fuzz input");
    if (c.model.size() + c.optimizer.size() + c.scheduler.size() > bytes.size()) __builtin_trap();
  } catch (const tinynet::FormatError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try_load(bytes);
  if (size >= kHeaderSize) {
    std::vector<std::byte> fixed(bytes.begin(), bytes.end());
    const std::span<const std::byte> payload = std::span<const std::byte>(fixed).subspan(kHeaderSize);
    tinynet::io::detail::put_le<std::uint64_t>(fixed.data() + 16, payload.size());
    tinynet::io::detail::put_le<std::uint32_t>(fixed.data() + 24, tinynet::io::detail::crc32(payload));
    tinynet::io::detail::put_le<std::uint32_t>(fixed.data() + 28,
                                               tinynet::io::detail::crc32(std::span<const std::byte>(fixed).first(28)));
    try_load(fixed);
  }
  return 0;
}
