// Hostile input: each malformed file is a FormatError (or FileError) naming the file and
// the problem; nothing crashes. Allocation bounds are in test_allocation_bound.cpp.

#include <catch2/catch.hpp>

#include "io/io_test_support.hpp"

using namespace tinynet;
using namespace io_test;
using Catch::Matchers::Contains;

namespace {

Bytes valid_file() {
  StateDict sd;
  sd.insert("w", from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}));
  sd.insert("n", from_vector<std::int64_t>({9}, Shape{}));
  return save_state_dict_to_bytes(sd);
}

StateDict load_bytes(const Bytes& b) { return load_state_dict_from_bytes(b, "hostile.tn"); }

// A one-entry payload with the given dtype code, rank, extents and data length, then `data` bytes.
Bytes entry_file(std::uint8_t code, std::uint8_t rank, std::initializer_list<std::int64_t> extents,
                 std::uint64_t data_len, std::size_t data_bytes) {
  Builder p = payload(1);
  p.str("layer.weight").u8(code).u8(rank);
  for (std::int64_t e : extents) p.i64(e);
  p.u64(data_len).raw(Bytes(data_bytes));
  return make_file(p.bytes());
}

}  // namespace

TEST_CASE("io hostile: every truncation of a valid file is rejected as truncated", "[io][hostile]") {
  const Bytes file = valid_file();
  for (std::size_t n = 0; n < file.size(); ++n) {
    INFO("first " << n << " of " << file.size() << " bytes");
    const Bytes cut(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(n));
    CHECK_THROWS_MATCHES(load_bytes(cut), FormatError, Says("hostile.tn") && Says("truncated file"));
  }
}

TEST_CASE("io hostile: a truncated file on disk names the path", "[io][hostile]") {
  Bytes file = valid_file();
  file.resize(file.size() - 5);
  TempDir dir;
  write_bytes(dir / "cut.tn", file);
  CHECK_THROWS_MATCHES(load_state_dict_file(dir / "cut.tn"), FormatError,
                       Says("load_state_dict_file: '" + (dir / "cut.tn").string() + "'") &&
                           Says("truncated file: the header announces"));
}

TEST_CASE("io hostile: every single-bit flip is detected", "[io][hostile]") {
  const Bytes file = valid_file();
  for (std::size_t i = 0; i < file.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      INFO("byte " << i << " bit " << bit);
      Bytes bad = file;
      bad[i] ^= std::byte{static_cast<unsigned char>(1u << bit)};
      CHECK_THROWS_AS(load_bytes(bad), FormatError);
    }
}

TEST_CASE("io hostile: flipped bytes give the message of the part they hit", "[io][hostile]") {
  const Bytes file = valid_file();
  auto flipped = [&](std::size_t at) {
    Bytes b = file;
    b[at] ^= std::byte{0x40};
    return b;
  };
  CHECK_THROWS_WITH(load_bytes(flipped(3)), Contains("not a tinynet file"));
  CHECK_THROWS_WITH(load_bytes(flipped(20)), Contains("header checksum mismatch"));
  CHECK_THROWS_WITH(load_bytes(flipped(29)), Contains("header checksum mismatch"));
  CHECK_THROWS_WITH(load_bytes(flipped(25)), Contains("header checksum mismatch"));
  CHECK_THROWS_WITH(load_bytes(flipped(40)), Contains("payload checksum mismatch") && Contains("the file is corrupt"));
  CHECK_THROWS_WITH(load_bytes(flipped(file.size() - 1)), Contains("payload checksum mismatch"));
}

TEST_CASE("io hostile: wrong magic", "[io][hostile]") {
  const std::string text = "<!DOCTYPE html><html>404 Not Found</html> and some more text to pass 32 bytes";
  Bytes html(text.size());
  std::memcpy(html.data(), text.data(), text.size());
  CHECK_THROWS_MATCHES(load_bytes(html), FormatError,
                       Says("hostile.tn") && Says("not a tinynet file") && Says("3c 21 44 4f"));
  Bytes gz = valid_file();
  gz[0] = std::byte{0x1f};
  gz[1] = std::byte{0x8b};
  CHECK_THROWS_WITH(load_bytes(gz), Contains("not a tinynet file"));
  CHECK_THROWS_WITH(load_bytes(Bytes{std::byte{'x'}}), Contains("not a tinynet file"));
}

TEST_CASE("io hostile: unknown versions", "[io][hostile]") {
  const Bytes p = payload(0).bytes();
  CHECK_THROWS_MATCHES(load_bytes(make_file(p, {.version = 2})), FormatError,
                       Says("format version 2 is newer than this build of tinynet reads (1)"));
  CHECK_THROWS_MATCHES(load_bytes(make_file(p, {.version = 0})), FormatError, Says("unknown format version 0"));
  CHECK(load_bytes(make_file(p, {.version = 1})).empty());
}

TEST_CASE("io hostile: unknown kind", "[io][hostile]") {
  CHECK_THROWS_MATCHES(load_bytes(make_file(payload(0).bytes(), {.kind = 7})), FormatError,
                       Says("unknown file kind 7"));
}

TEST_CASE("io hostile: bytes after the payload", "[io][hostile]") {
  Bytes file = valid_file();
  file.push_back(std::byte{0});
  CHECK_THROWS_MATCHES(load_bytes(file), FormatError, Says("1 unexpected bytes after the"));
}

TEST_CASE("io hostile: payload-level problems", "[io][hostile]") {
  SECTION("empty payload") {
    CHECK_THROWS_MATCHES(load_bytes(make_file({})), FormatError, Says("truncated payload: empty"));
  }
  SECTION("big-endian or garbage flag") {
    Builder p;
    p.u8(0).u64(0);
    CHECK_THROWS_MATCHES(load_bytes(make_file(p.bytes())), FormatError, Says("endianness flag is 0"));
  }
  SECTION("payload cut inside an entry, checksums consistent") {
    Builder p = payload(1);
    p.str("w").u8(1).u8(1).i64(2).u32(0);  // half of the data length
    CHECK_THROWS_MATCHES(load_bytes(make_file(p.bytes())), FormatError,
                         Says("truncated payload: entry 'w''s data length needs 8 bytes, 4 remain"));
  }
  SECTION("count says two entries, one present") {
    Builder p = payload(2);
    float_entry(p, "w", 1);
    // 18 trailing zero bytes let the count pass the size check and fail at the second name.
    p.raw(Bytes(18));
    CHECK_THROWS_MATCHES(load_bytes(make_file(p.bytes())), FormatError, Says("entry '' has unknown dtype code 0"));
  }
  SECTION("bytes after the last entry") {
    Builder p = payload(1);
    float_entry(p, "w", 1).u8(0).u8(0);
    CHECK_THROWS_MATCHES(load_bytes(make_file(p.bytes())), FormatError,
                         Says("2 unexpected bytes after the last of 1 entries"));
  }
  SECTION("name longer than the payload") {
    Builder p = payload(1);
    p.u64(40).raw("short", 5).raw(Bytes(20));
    CHECK_THROWS_MATCHES(load_bytes(make_file(p.bytes())), FormatError,
                         Says("entry #0 claims a name of 40 bytes, but only 25 bytes remain"));
  }
  SECTION("duplicate names") {
    Builder p = payload(2);
    float_entry(p, "w", 1);
    float_entry(p, "w", 2);
    CHECK_THROWS_MATCHES(load_bytes(make_file(p.bytes())), FormatError, Says("duplicate entry 'w'"));
  }
  SECTION("binary names are escaped in messages") {
    Builder p = payload(1);
    p.str(std::string("a\x01\xff", 3)).u8(99).u8(0).u64(0);
    CHECK_THROWS_MATCHES(load_bytes(make_file(p.bytes())), FormatError,
                         Says("entry 'a\\x01\\xff' has unknown dtype code 99"));
  }
}

TEST_CASE("io hostile: malformed tensor headers", "[io][hostile]") {
  SECTION("unknown dtype") {
    CHECK_THROWS_MATCHES(load_bytes(entry_file(9, 1, {2}, 8, 8)), FormatError,
                         Says("entry 'layer.weight' has unknown dtype code 9"));
    CHECK_THROWS_MATCHES(load_bytes(entry_file(0, 1, {2}, 8, 8)), FormatError, Says("unknown dtype code 0"));
  }
  SECTION("rank above 6") {
    CHECK_THROWS_MATCHES(load_bytes(entry_file(1, 7, {1, 1, 1, 1, 1, 1, 1}, 4, 4)), FormatError,
                         Says("entry 'layer.weight' has rank 7, more than the maximum of 6"));
    CHECK_THROWS_MATCHES(load_bytes(entry_file(1, 255, {}, 0, 0)), FormatError, Says("has rank 255"));
  }
  SECTION("negative extent") {
    CHECK_THROWS_MATCHES(load_bytes(entry_file(1, 2, {2, -3}, 0, 0)), FormatError,
                         Says("negative extent -3 in dimension 1"));
  }
  SECTION("extents whose product overflows") {
    const std::int64_t big = std::int64_t{1} << 40;
    CHECK_THROWS_MATCHES(load_bytes(entry_file(1, 3, {big, big, big}, 0, 0)), FormatError,
                         Says("product overflows 64 bits"));
    // A zero extent makes the tensor empty, but the other extents must still be sane.
    CHECK_THROWS_MATCHES(load_bytes(entry_file(1, 3, {big, big, 0}, 0, 0)), FormatError,
                         Says("product overflows 64 bits"));
  }
  SECTION("more elements than bytes") {
    CHECK_THROWS_MATCHES(load_bytes(entry_file(2, 2, {100, 100}, 80000, 64)), FormatError,
                         Says("shape [100, 100] (10000 float64 elements), more than the"));
  }
  SECTION("data length disagrees with the shape") {
    CHECK_THROWS_MATCHES(load_bytes(entry_file(3, 1, {2}, 4, 8)), FormatError,
                         Says("records 4 data bytes, but shape [2] of int32 needs 8"));
  }
  SECTION("an empty tensor with large extents is fine") {
    const StateDict sd = load_bytes(entry_file(1, 2, {0, std::int64_t{1} << 40}, 0, 0));
    CHECK(sd.at("layer.weight").shape() == Shape{0, std::int64_t{1} << 40});
    CHECK(sd.at("layer.weight").numel() == 0);
  }
}

TEST_CASE("io hostile: files that cannot be read are FileErrors naming the path", "[io][hostile]") {
  TempDir dir;
  CHECK_THROWS_MATCHES(
      load_state_dict_file(dir / "missing.tn"), FileError,
      Says("cannot open '" + (dir / "missing.tn").string() + "'") && Says("No such file or directory"));
  CHECK_THROWS_MATCHES(load_state_dict_file(dir.path()), FileError, Says("is not a regular file"));
  write_bytes(dir / "empty.tn", {});
  CHECK_THROWS_MATCHES(load_state_dict_file(dir / "empty.tn"), FormatError,
                       Says("empty.tn") && Says("truncated file: 0 bytes"));
}
