#include <catch2/catch.hpp>
#include <tinynet/data/idx.hpp>

#include "data/helpers.hpp"

using namespace tinynet::data;
using namespace test_data;
using Catch::Contains;

namespace {

// Reads `bytes` written to `dir/name`, expecting a FormatError whose message names the
// file and contains every fragment in `says`.
void check_rejected(const TempDir& dir, const std::string& name, const Bytes& bytes,
                    const std::vector<std::string>& says, const IdxSpec& spec = {}) {
  const auto path = dir / name;
  write_file(path, bytes);
  INFO("file " << name);
  try {
    read_idx(path, spec);
    FAIL("read_idx accepted a malformed file");
  } catch (const FormatError& e) {
    const std::string msg = e.what();
    INFO("message: " << msg);
    CHECK_THAT(msg, Contains(path.string()));
    for (const auto& s : says) CHECK_THAT(msg, Contains(s));
  }
}

}  // namespace

TEST_CASE("idx: raw and gzip files read back the same array", "[idx]") {
  TempDir dir;
  const Bytes file = idx_u8({3, 4, 5});
  write_file(dir / "a-idx3-ubyte", file);
  write_file(dir / "b-idx3-ubyte.gz", gzip(file));
  write_file(dir / "c-named-raw-but-gzipped", gzip(file));  // compression found by content, not name
  for (const char* name : {"a-idx3-ubyte", "b-idx3-ubyte.gz", "c-named-raw-but-gzipped"}) {
    INFO(name);
    const IdxArray a = read_idx(dir / name, {.type = IdxType::u8, .rank = 3, .dims = {-1, 4, 5}});
    CHECK(a.type == IdxType::u8);
    CHECK(a.dims == std::vector<std::int64_t>{3, 4, 5});
    CHECK(a.numel() == 60);
    REQUIRE(a.bytes.size() == 60);
    CHECK(a.values<std::uint8_t>()[59] == 59);
    CHECK(Bytes(a.bytes.begin(), a.bytes.end()) == Bytes(file.begin() + 16, file.end()));
  }
}

TEST_CASE("idx: multi-byte elements are decoded from big-endian", "[idx]") {
  TempDir dir;
  Bytes file = idx_header(0x0C, {2});
  for (unsigned char b : {0x00, 0x00, 0x01, 0x02, 0xFF, 0xFF, 0xFF, 0xFE}) file.push_back(b);
  write_file(dir / "ints", file);
  const IdxArray a = read_idx(dir / "ints");
  CHECK(a.type == IdxType::i32);
  CHECK(a.values<std::int32_t>() == std::vector<std::int32_t>{258, -2});
  CHECK_THROWS_AS(a.values<std::uint8_t>(), tinynet::TypeError);
}

TEST_CASE("idx: an extent of 0 reads as an empty array, raw and gzip", "[idx]") {
  // Regression (fuzz.idx, UBSan): the empty payload was read through memcpy into the null
  // data() of an empty vector. tests/fuzz/seeds/idx/zero-extent-* is the fuzzer's input.
  TempDir dir;
  const Bytes empty = idx_u8({0, 28, 28});
  write_file(dir / "empty", empty);
  write_file(dir / "empty.gz", gzip(empty));
  for (const char* name : {"empty", "empty.gz"}) {
    INFO(name);
    const IdxArray a = read_idx(dir / name, {.type = IdxType::u8, .rank = 3});
    CHECK(a.dims == std::vector<std::int64_t>{0, 28, 28});
    CHECK(a.numel() == 0);
    CHECK(a.bytes.empty());
  }
  check_rejected(dir, "empty-plus-one", concat(empty, {7}), {"1 extra byte(s) after the 0 data bytes"});
}

TEST_CASE("idx: concatenated gzip members are one stream", "[idx]") {
  TempDir dir;
  const Bytes file = idx_u8({100});
  const Bytes first(file.begin(), file.begin() + 40), second(file.begin() + 40, file.end());
  write_file(dir / "two-members.gz", concat(gzip(first), gzip(second)));
  CHECK(read_idx(dir / "two-members.gz").bytes.size() == 100);
}

TEST_CASE("idx: truncated files are rejected", "[idx][errors]") {
  TempDir dir;
  const Bytes file = idx_u8({10, 28, 28});
  const Bytes header_only(file.begin(), file.begin() + 16);
  const Bytes half(file.begin(), file.begin() + 16 + 3920);
  check_rejected(dir, "header-only", header_only, {"truncated", "7840 data bytes", "[10, 28, 28]", "holds only 0"});
  check_rejected(dir, "half", half, {"truncated", "holds only 3920"});
  check_rejected(dir, "half.gz", gzip(half), {"truncated", "ends after 3920 of the 7840"});
  check_rejected(dir, "cut-header", Bytes(file.begin(), file.begin() + 10), {"header is cut short"});
  check_rejected(dir, "tiny", Bytes{0, 0}, {"too short"});
  check_rejected(dir, "empty", Bytes{}, {"empty"});
}

TEST_CASE("idx: bytes beyond the promised data are rejected", "[idx][errors]") {
  TempDir dir;
  const Bytes longer = concat(idx_u8({10, 28, 28}), {0});
  check_rejected(dir, "one-extra", longer, {"1 extra byte(s) after the 7840 data bytes"});
  check_rejected(dir, "one-extra.gz", gzip(longer), {"goes on past the 7840 data bytes"});
  check_rejected(dir, "garbage-after-gzip.gz", concat(gzip(idx_u8({4})), {'x', 'y', 'z', 'z', 'y'}),
                 {"after the end of the gzip data"});
  check_rejected(dir, "one-byte-after-gzip.gz", concat(gzip(idx_u8({4})), {0}), {"after the end of the gzip data"});
}

TEST_CASE("idx: bad magic, type and rank are rejected", "[idx][errors]") {
  TempDir dir;
  Bytes wrong_magic = idx_u8({4});
  wrong_magic[0] = 0x12;
  wrong_magic[1] = 0x34;
  check_rejected(dir, "magic", wrong_magic, {"bad magic number 12 34 08 01", "00 00 <type> <ndims>"});
  Bytes wrong_type = idx_u8({4});
  wrong_type[2] = 0x07;
  check_rejected(dir, "type", wrong_type, {"unknown element type byte 07"});
  Bytes ints = idx_header(0x0C, {1});
  ints.insert(ints.end(), 4, 0);
  check_rejected(dir, "ints", ints, {"element type is i32 (0x0C), expected u8 (0x08)"}, {.type = IdxType::u8});
  check_rejected(dir, "rank", idx_u8({6}), {"rank 1 (dims [6]), expected rank 3"}, {.rank = 3});
  check_rejected(dir, "dims", idx_u8({2, 27, 28}), {"dimension 1 is 27, expected 28"},
                 {.type = {}, .rank = 3, .dims = {-1, 28, 28}});
  check_rejected(dir, "rank0", Bytes{0, 0, 8, 0}, {"0 dimensions"});
}

TEST_CASE("idx: dims that overflow or exceed the file are rejected before allocating", "[idx][errors]") {
  TempDir dir;
  // 0xFFFFFFFF^4 overflows 64 bits: the product must be checked, not computed and wrapped.
  check_rejected(dir, "overflow", idx_header(0x08, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}),
                 {"more than 2^63 bytes"});
  check_rejected(dir, "f64-overflow", idx_header(0x0E, {0x80000000, 0x80000000}), {"more than 2^63 bytes"});
  check_rejected(dir, "huge", concat(idx_header(0x08, {60000, 28, 28}), Bytes(100, 1)),
                 {"truncated", "47040000 data bytes", "holds only 100"});
  // A gzip file of a few dozen bytes cannot hold 4 GB: refused without trying to.
  check_rejected(dir, "huge.gz", gzip(concat(idx_header(0x08, {0xFFFFFFFF}), Bytes(100, 1))),
                 {"more than a", "gzip file can decompress to"});
}

TEST_CASE("idx: files seen in the wild get a message saying what they are", "[idx][errors]") {
  TempDir dir;
  const std::string html = "<!DOCTYPE html><html><body>404 Not Found</body></html>\n";
  check_rejected(dir, "page", Bytes(html.begin(), html.end()), {"web page", "<!DOCTYPE html>", "error page"});
  const std::string lower = "<html><head><title>Error</title></head></html>";
  check_rejected(dir, "page.gz", gzip(Bytes(lower.begin(), lower.end())), {"web page", "(gzip)"});
  check_rejected(dir, "twice.gz", gzip(gzip(idx_u8({4}))), {"gzip-compressed again"});
  // A gzip download cut off mid-stream.
  const Bytes gz = gzip(idx_u8({1000}), 0);  // stored blocks, so half the bytes is half the data
  check_rejected(dir, "cut.gz", Bytes(gz.begin(), gz.begin() + gz.size() / 2), {"gzip stream ends early", "truncated"});
  Bytes corrupt = gzip(idx_u8({1000}));
  corrupt[corrupt.size() - 6] ^= 0xFF;  // inside the CRC-32 trailer
  check_rejected(dir, "crc.gz", corrupt, {"corrupt gzip data"});
}

TEST_CASE("idx: missing files and directories are FileErrors", "[idx][errors]") {
  TempDir dir;
  CHECK_THROWS_AS(read_idx(dir / "absent"), FileError);
  CHECK_THROWS_WITH(read_idx(dir / "absent"), Contains("absent") && Contains("cannot open"));
  CHECK_THROWS_WITH(read_idx(dir.path()), Contains("is a directory"));
}
