// libFuzzer target for the IDX reader (tinynet/data/idx.hpp), raw and gzip: arbitrary bytes
// are read as an IDX file twice, as given (which reaches the gzip path when they start with
// 1f 8b) and gzip-compressed by zlib, so that mutations reach the IDX parser behind the
// decompressor too. The only acceptable failure is a FormatError; another exception, a
// crash, a sanitizer report or an allocation above -malloc_limit_mb is a finding.
// Built and run by run_fuzz.cmake (TARGET=fuzz_idx, seeds in tests/fuzz/seeds/idx).

#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <tinynet/data/idx.hpp>
#include <vector>

namespace {

// One in-memory file, rewritten for every input: read_idx takes a path.
struct MemFile {
  int fd = ::memfd_create("fuzz_idx", 0);
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  void write(const std::uint8_t* data, std::size_t size) {
    if (fd < 0 || ::ftruncate(fd, 0) != 0) __builtin_trap();
    for (std::size_t done = 0; done < size;) {
      const ssize_t k = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
      if (k <= 0) __builtin_trap();
      done += static_cast<std::size_t>(k);
    }
  }
};

std::vector<std::uint8_t> gzip(const std::uint8_t* data, std::size_t size) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    __builtin_trap();
  std::vector<std::uint8_t> out(deflateBound(&zs, size));
  zs.next_in = const_cast<Bytef*>(data);
  zs.avail_in = static_cast<uInt>(size);
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  if (deflate(&zs, Z_FINISH) != Z_STREAM_END) __builtin_trap();
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

void try_read(MemFile& file, const std::uint8_t* data, std::size_t size) {
  file.write(data, size);
  try {
    const tinynet::data::IdxArray a = tinynet::data::read_idx(file.path);
    // A successful read holds exactly what its header promises, never more than deflate
    // could have produced from the input.
    const auto want = static_cast<std::uint64_t>(a.numel()) * tinynet::data::idx_element_size(a.type);
    if (a.bytes.size() != want) __builtin_trap();
    if (a.bytes.size() > size * tinynet::data::detail::kMaxDeflateRatio) __builtin_trap();
  } catch (const tinynet::FormatError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static MemFile file;
  try_read(file, data, size);
  const std::vector<std::uint8_t> packed = gzip(data, size);
  try_read(file, packed.data(), packed.size());
  return 0;
}
