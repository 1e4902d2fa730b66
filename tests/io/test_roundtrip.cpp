// Round trips: every dtype and rank, bit for bit, and the byte layout pinned against a
// file built by hand from docs/file-format.md.

#include <catch2/catch.hpp>

#include "io/io_test_support.hpp"

using namespace tinynet;
using namespace io_test;

namespace {

// A tensor of `shape` and `dtype` whose bytes are arbitrary bit patterns (NaN payloads,
// infinities, denormals and -0 included for the floating types).
Tensor random_bits(const Shape& shape, DType dtype, std::uint64_t seed) {
  Tensor t(shape, {dtype, Device::cpu(), false});
  auto* bytes = static_cast<unsigned char*>(t.raw_data());
  std::uint32_t r[4];
  for (std::size_t i = 0; i < t.nbytes(); ++i) {
    if (i % 16 == 0) tinynet::detail::Philox4x32::generate(seed, i / 16, r);
    bytes[i] = static_cast<unsigned char>(r[(i % 16) / 4] >> (8 * (i % 4)));
  }
  return t;
}

Shape shape_of_rank(int rank) {
  Shape s;
  const std::int64_t extents[] = {3, 1, 2, 4, 1, 2};
  for (int d = 0; d < rank; ++d) s.push_back(extents[d]);
  return s;
}

}  // namespace

TEST_CASE("io round trip: every dtype at ranks 0 to 6, bitwise, through a file", "[io][roundtrip]") {
  StateDict sd;
  std::uint64_t seed = 1;
  for (DType dt : {DType::float32, DType::float64, DType::int32, DType::int64, DType::bfloat16})
    for (int rank = 0; rank <= Shape::kMaxRank; ++rank)
      sd.insert(std::string(dtype_name(dt)) + ".rank" + std::to_string(rank),
                random_bits(shape_of_rank(rank), dt, seed++));
  // Special values at known places, so the test does not rely on chance to contain them.
  sd.insert("specials",
            from_vector<double>({-0.0, std::numeric_limits<double>::infinity(),
                                 std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::denorm_min()},
                                {4}));
  sd.insert("empty", empty({0, 5}));
  sd.insert("int64 extremes", from_vector<std::int64_t>({INT64_MIN, INT64_MAX, -1}, {3}));

  TempDir dir;
  save_state_dict(sd, dir / "all.tn");
  const StateDict back = load_state_dict_file(dir / "all.tn");
  REQUIRE(back.size() == sd.size());
  auto it = back.begin();
  for (const auto& [name, t] : sd) {
    INFO(name);
    CHECK(it->first == name);
    CHECK(it->second.dtype() == t.dtype());
    CHECK(it->second.shape() == t.shape());
    CHECK(it->second.device() == Device::cpu());
    CHECK(std::memcmp(it->second.raw_data(), t.raw_data(), t.nbytes()) == 0);
    CHECK_FALSE(it->second.shares_storage(t));
    ++it;
  }
  CHECK(back.at("float32.rank6").shape() == Shape{3, 1, 2, 4, 1, 2});
  CHECK(back.at("int64.rank0").dim() == 0);
}

TEST_CASE("io round trip: memory and file images are the same bytes", "[io][roundtrip]") {
  StateDict sd;
  sd.insert("a", randn({2, 3}));
  sd.insert("b", arange(5));
  TempDir dir;
  save_state_dict(sd, dir / "x.tn");
  const Bytes image = save_state_dict_to_bytes(sd);
  CHECK(read_bytes(dir / "x.tn") == image);
  CHECK(bitwise_equal(load_state_dict_from_bytes(image), sd));
  CHECK(save_state_dict_to_bytes(sd, FileKind::checkpoint) != image);
}

TEST_CASE("io round trip: an empty state_dict and odd names", "[io][roundtrip]") {
  CHECK(load_state_dict_from_bytes(save_state_dict_to_bytes(StateDict{})).empty());
  StateDict sd;
  sd.insert("", zeros({1}));
  sd.insert(std::string("nul\0inside", 10), ones({2}));
  sd.insert("ünïcødé.weight", full({1}, 3.0));
  const StateDict back = load_state_dict_from_bytes(save_state_dict_to_bytes(sd));
  CHECK(bitwise_equal(back, sd));
  CHECK(back.contains(std::string("nul\0inside", 10)));
}

TEST_CASE("io format: the bytes match the layout documented in docs/file-format.md", "[io][format]") {
  StateDict sd;
  sd.insert("fc.weight", from_vector<float>({1.5f, -2.0f, 0.25f, 8.0f, 0.0f, -0.5f}, {2, 3}));
  sd.insert("step", from_vector<std::int64_t>({7}, Shape{}));

  Builder p;
  p.u8(1).u64(2);
  p.str("fc.weight").u8(1).u8(2).i64(2).i64(3).u64(24);
  for (float v : {1.5f, -2.0f, 0.25f, 8.0f, 0.0f, -0.5f}) p.raw(&v, 4);  // little-endian host
  p.str("step").u8(4).u8(0).u64(8).i64(7);
  const Bytes expected = make_file(p.bytes(), {.kind = 1});

  const Bytes actual = save_state_dict_to_bytes(sd);
  CHECK(actual == expected);
  REQUIRE(actual.size() > 32);
  // Spot checks of the header, against numbers worked out by hand.
  CHECK(std::memcmp(actual.data(), "TINYNET\0", 8) == 0);
  CHECK(actual[8] == std::byte{1});                                                // version 1
  CHECK(actual[12] == std::byte{1});                                               // kind: weights
  CHECK(actual[16] == std::byte{static_cast<unsigned char>(actual.size() - 32)});  // payload length
  CHECK(actual[32] == std::byte{1});                                               // little-endian flag
}
