// bfloat16 tensors in files: tinynet's own format (dtype code 5, the bits as little-endian
// uint16) and PyTorch's (torch.BFloat16Storage) keep every bit pattern, and malformed
// bfloat16 entries are FormatErrors that say what is wrong.

#include <catch2/catch.hpp>

#include "io/pytorch_test_support.hpp"

using namespace tinynet;
using namespace io_test;

namespace {

// Every bfloat16 bit pattern (NaNs with any payload, infinities, denormals, -0), as a 256 x 256 tensor.
Tensor every_bf16_pattern() {
  Tensor t(Shape{256, 256}, {DType::bfloat16, Device::cpu(), false});
  for (std::uint32_t b = 0; b <= 0xFFFF; ++b)
    t.data<bfloat16>()[b] = bfloat16::from_bits(static_cast<std::uint16_t>(b));
  return t;
}

StateDict bf16_state_dict() {
  StateDict sd;
  sd.insert("all", every_bf16_pattern());
  sd.insert("scalar", scalar_tensor(0.1, {.dtype = DType::bfloat16}));
  sd.insert("empty", zeros({0, 3}, {.dtype = DType::bfloat16}));
  sd.insert("beside", from_vector<float>({1.5f, -2.0f}, {2}));
  return sd;
}

// A one-entry tinynet file: entry "b" of dtype code 5, shape [3], `data_len` announced, `data` following.
Bytes bf16_entry_file(std::uint64_t data_len, const Bytes& data) {
  Builder p = payload(1);
  p.str("b").u8(5).u8(1).i64(3).u64(data_len).raw(data);
  return make_file(p.bytes());
}

// 1, NaN, -0 as bfloat16 bits, little-endian.
const Bytes kThreeBf16 = {std::byte{0x80}, std::byte{0x3F}, std::byte{0xC0},
                          std::byte{0x7F}, std::byte{0x00}, std::byte{0x80}};

}  // namespace

TEST_CASE("bfloat16 file: every bit pattern round-trips through a tinynet file", "[io][bfloat16]") {
  const StateDict sd = bf16_state_dict();
  TempDir dir;
  save_state_dict(sd, dir / "bf16.tn");
  const StateDict back = load_state_dict_file(dir / "bf16.tn");
  CHECK(back.at("all").dtype() == DType::bfloat16);
  CHECK(back.at("scalar").item<bfloat16>().bits == 0x3DCD);
  CHECK(bitwise_equal(sd, back));
  CHECK(bitwise_equal(sd, load_state_dict_from_bytes(save_state_dict_to_bytes(sd), "bf16.tn")));
}

TEST_CASE("bfloat16 file: the entry is dtype code 5 and little-endian uint16 bits", "[io][bfloat16]") {
  StateDict sd;
  sd.insert("b", from_vector<float>({1.0f, std::numeric_limits<float>::quiet_NaN(), -0.0f}, {3}).to(DType::bfloat16));
  CHECK(save_state_dict_to_bytes(sd) == bf16_entry_file(6, kThreeBf16));
  const StateDict back = load_state_dict_from_bytes(bf16_entry_file(6, kThreeBf16), "hand.tn");
  CHECK(back.at("b").data<bfloat16>()[0].bits == 0x3F80);
  CHECK(back.at("b").data<bfloat16>()[1].bits == 0x7FC0);
  CHECK(back.at("b").data<bfloat16>()[2].bits == 0x8000);
}

TEST_CASE("bfloat16 file: truncated and corrupt bfloat16 entries are named", "[io][bfloat16]") {
  const Bytes two(kThreeBf16.begin(), kThreeBf16.begin() + 4);
  CHECK_THROWS_MATCHES(load_state_dict_from_bytes(bf16_entry_file(6, two), "cut.tn"), FormatError,
                       Says("cut.tn") && Says("entry 'b' has shape [3] (3 bfloat16 elements), more than the 4 bytes"));
  CHECK_THROWS_MATCHES(load_state_dict_from_bytes(bf16_entry_file(12, kThreeBf16), "long.tn"), FormatError,
                       Says("entry 'b' records 12 data bytes, but shape [3] of bfloat16 needs 6"));

  // Every truncation and every bit flip of a saved file is caught.
  StateDict sd;
  sd.insert("b", ones({5}, {.dtype = DType::bfloat16}));
  const Bytes file = save_state_dict_to_bytes(sd);
  for (std::size_t n = 0; n < file.size(); ++n) {
    const Bytes cut(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(n));
    CHECK_THROWS_MATCHES(load_state_dict_from_bytes(cut, "cut.tn"), FormatError, Says("truncated file"));
  }
  Bytes flipped = file;
  flipped.back() ^= std::byte{0x01};
  CHECK_THROWS_MATCHES(load_state_dict_from_bytes(flipped, "flip.tn"), FormatError, Says("payload checksum mismatch"));
}

TEST_CASE("bfloat16 file: PyTorch files store torch.bfloat16 bit for bit", "[io][pytorch][bfloat16]") {
  const StateDict sd = bf16_state_dict();
  const Bytes file = save_pytorch_state_dict_to_bytes(sd);
  CHECK(bitwise_equal(sd, load_pytorch_state_dict_from_bytes(file, "bf16.pt")));
  const auto entries = io::detail::read_zip_directory(file, "bf16.pt");
  const auto pkl = io::detail::zip_entry_bytes(file, entries[0], "bf16.pt");
  const std::string pickle(reinterpret_cast<const char*>(pkl.data()), pkl.size());
  CHECK_THAT(pickle, Catch::Contains("ctorch\nBFloat16Storage\n"));
  CHECK_THAT(pickle, Catch::Contains("ctorch\nFloatStorage\n"));  // "beside" stays float32

  // A file as torch.save writes it for a bfloat16 tensor of shape [3].
  const TensorSpec spec{.name = "b", .storage_type = "BFloat16Storage", .numel = 3, .sizes = {3}, .strides = {1}};
  const StateDict read = load_pytorch_state_dict_from_bytes(archive(state_dict_pickle({spec}), {{"0", kThreeBf16}}));
  CHECK(bitwise_equal(read.at("b"), load_state_dict_from_bytes(bf16_entry_file(6, kThreeBf16)).at("b")));
  // A storage of 2-byte elements shorter than it declares.
  const Bytes short_storage(kThreeBf16.begin(), kThreeBf16.begin() + 5);
  CHECK_THROWS_MATCHES(
      load_pytorch_state_dict_from_bytes(archive(state_dict_pickle({spec}), {{"0", short_storage}}), "short.pt"),
      FormatError, Says("short.pt") && Says("storage '0' declares 3 elements of 2 bytes, its entry holds 5 bytes"));
}

TEST_CASE("bfloat16 file: checkpoints keep bfloat16 entries bit for bit", "[io][checkpoint][bfloat16]") {
  Checkpoint c;
  c.model.insert("all", every_bf16_pattern());
  c.optimizer.insert("beside", ones({2}));
  c.epoch = 3;
  TempDir dir;
  save_checkpoint(dir / "bf16.ckpt", c);
  const Checkpoint back = load_checkpoint(dir / "bf16.ckpt");
  CHECK(bitwise_equal(back.model, c.model));
  CHECK(bitwise_equal(back.optimizer, c.optimizer));
  CHECK(back.epoch == 3);
}
