// libFuzzer target for the tar reader (tinynet/data/tar.hpp), raw and gzip: arbitrary bytes
// are read as a tar archive twice, as given and gzip-compressed by zlib, every member's data
// read to its end. The only acceptable failure is a FormatError; another exception, a crash,
// a sanitizer report, a member handing out more bytes than its header states, or an
// allocation above -malloc_limit_mb is a finding.
// Built and run by run_fuzz.cmake (TARGET=fuzz_tar, seeds in tests/fuzz/seeds/tar).

#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <tinynet/data/tar.hpp>
#include <vector>

namespace {

// One in-memory file, rewritten for every input: TarReader takes a path.
struct MemFile {
  int fd = ::memfd_create("fuzz_tar", 0);
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
    tinynet::data::TarReader tar(file.path);
    char buf[4096];
    while (auto m = tar.next()) {
      std::uint64_t got = 0;
      for (std::size_t n; (n = tar.read(buf, sizeof buf)) > 0;) got += n;
      if (m->type != '5' && got != m->size) __builtin_trap();
    }
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
