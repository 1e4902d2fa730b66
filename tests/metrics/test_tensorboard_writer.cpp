// TensorBoardWriter, the C++ side: checksums against published check values, file naming,
// the framing of each record, flushing, and errors. tfevents_sample_test.py reads a file
// back with a reader written independently from the format description.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <tinynet/metrics/crc32c.hpp>
#include <tinynet/metrics/tensorboard_writer.hpp>
#include <vector>

#include "temp_dir.hpp"

namespace fs = std::filesystem;
using tinynet::testing::TempDir;
using namespace tinynet::metrics;

namespace {

std::span<const std::uint8_t> bytes_of(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::uint64_t le(const std::string& s, std::size_t at, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = v << 8 | static_cast<std::uint8_t>(s[at + static_cast<std::size_t>(i)]);
  return v;
}

/// The data of each record in `file`, checking each record's framing.
std::vector<std::string> records(const std::string& file) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < file.size()) {
    REQUIRE(file.size() - at >= 12);
    const std::uint64_t n = le(file, at, 8);
    CHECK(le(file, at + 8, 4) == masked_crc32c(bytes_of(std::string_view(file).substr(at, 8))));
    REQUIRE(file.size() - at >= 16 + n);
    out.push_back(file.substr(at + 12, n));
    CHECK(le(file, at + 12 + n, 4) == masked_crc32c(bytes_of(out.back())));
    at += 16 + n;
  }
  return out;
}

}  // namespace

TEST_CASE("crc32c matches the published check values", "[metrics][tensorboard]") {
  // The CRC catalogue's check value for CRC-32C, and RFC 3720's (iSCSI) test vectors.
  CHECK(crc32c(bytes_of("123456789")) == 0xE3069283U);
  CHECK(crc32c(bytes_of(std::string(32, '\0'))) == 0x8A9136AAU);
  CHECK(crc32c(bytes_of(std::string(32, '\xff'))) == 0x62A8AB43U);
  CHECK(crc32c(bytes_of("")) == 0U);
  static_assert(crc32c(std::span<const std::uint8_t>()) == 0U, "usable at compile time");
  // The mask: rotate right 15, add 0xa282ead8 (mod 2^32).
  const std::uint32_t c = 0xE3069283U;
  CHECK(masked_crc32c(bytes_of("123456789")) == static_cast<std::uint32_t>(((c >> 15) | (c << 17)) + 0xA282EAD8U));
}

TEST_CASE("TensorBoardWriter creates the directory and a TensorBoard-named file", "[metrics][tensorboard]") {
  const TempDir tmp("tinynet-tb");
  const fs::path dir = tmp / "run1";
  TensorBoardWriter w(dir);
  CHECK(w.path().parent_path() == dir);
  const std::string name = w.path().filename().string();
  CHECK(name.starts_with("events.out.tfevents."));
  // ... .<pid>.<n>
  const std::string pid_and_n = name.substr(name.rfind('.', name.rfind('.') - 1));
  std::string pid = ".";  // built with += : GCC 12 warns falsely (-Wrestrict) on "literal" + string
  pid += std::to_string(::getpid());
  CHECK(pid_and_n.starts_with(pid + '.'));
  TensorBoardWriter second(dir);
  CHECK(second.path() != w.path());
}

TEST_CASE("TensorBoardWriter writes one framed record per event, flushed at once", "[metrics][tensorboard]") {
  const TempDir dir("tinynet-tb");
  TensorBoardWriter w(dir.path());
  auto recs = records(read_all(w.path()));
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].find("brain.Event:2") != std::string::npos);
  w.add_scalar("train/loss", 0.5, 10, 1700000000.25);
  w.add_scalar("test/accuracy", 0.98, 20);
  recs = records(read_all(w.path()));  // read while the writer is still open
  REQUIRE(recs.size() == 3);
  // The scalar event, byte by byte: wall_time (field 1, fixed64), step (field 2, varint),
  // summary (field 5) { value (field 1) { tag (field 1), simple_value (field 2, fixed32) } }.
  // 1700000000.25 is 0x41D954FC40100000 as an IEEE double.
  const std::string expected = std::string("\x09\x00\x00\x10\x40\xfc\x54\xd9\x41", 9) + "\x10\x0a" +
                               std::string("\x2a\x13\x0a\x11\x0a\x0a", 6) + "train/loss" +
                               std::string("\x15\x00\x00\x00\x3f", 5);
  CHECK(recs[1] == expected);
  CHECK(recs[2].find("test/accuracy") != std::string::npos);
}

TEST_CASE("TensorBoardWriter names the directory it cannot create", "[metrics][tensorboard]") {
  const TempDir tmp("tinynet-tb");
  const fs::path& base = tmp.path();
  std::ofstream(base / "file") << "not a directory";
  CHECK_THROWS_AS(TensorBoardWriter(base / "file" / "run"), tinynet::FileError);
  CHECK_THROWS_WITH(TensorBoardWriter(base / "file" / "run"),
                    Catch::Matchers::Contains("TensorBoardWriter: cannot create the log directory '" +
                                              (base / "file" / "run").string() + "'"));
}
