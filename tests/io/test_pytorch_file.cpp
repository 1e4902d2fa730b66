// PyTorch state_dict files: what the writer produces reads back bit for bit, the reader
// follows views (offsets, strides) as PyTorch does, and the layout is torch.save's.
// tests/interop checks both directions against the real PyTorch.

#include <catch2/catch.hpp>

#include "io/pytorch_test_support.hpp"

using namespace tinynet;
using namespace io_test;

TEST_CASE("pytorch file: every dtype and rank round-trips bit for bit", "[io][pytorch]") {
  manual_seed(3);
  StateDict sd;
  int i = 0;
  for (DType dt : {DType::float32, DType::float64, DType::int32, DType::int64, DType::bfloat16}) {
    Shape shape;
    for (int rank = 0; rank <= Shape::kMaxRank; ++rank) {
      sd.insert(std::string(dtype_name(dt)) + "." + std::to_string(rank),
                dt == DType::float32 ? rand(shape) : full(shape, ++i * 1000 + 7, {.dtype = dt}));
      if (rank < Shape::kMaxRank) shape.push_back(rank % 3 + 1);
    }
  }
  sd.insert("empty", zeros({0, 4}));
  sd.insert("conv1.weight", randn({32, 1, 3, 3}));
  const Bytes file = save_pytorch_state_dict_to_bytes(sd);
  const StateDict back = load_pytorch_state_dict_from_bytes(file, "roundtrip.pt");
  CHECK(bitwise_equal(sd, back));

  TempDir dir;
  save_pytorch_state_dict(sd, dir / "sd.pt");
  CHECK(read_bytes(dir / "sd.pt") == file);
  CHECK(bitwise_equal(sd, load_pytorch_state_dict(dir / "sd.pt")));
  CHECK(is_pytorch_file(dir / "sd.pt"));
  save_state_dict(sd, dir / "sd.tn");
  CHECK_FALSE(is_pytorch_file(dir / "sd.tn"));
}

TEST_CASE("pytorch file: the layout is torch.save's", "[io][pytorch]") {
  StateDict sd;
  sd.insert("fc.weight", ones({2, 3}));
  sd.insert("fc.bias", zeros({2}));
  const Bytes file = save_pytorch_state_dict_to_bytes(sd);
  const auto entries = io::detail::read_zip_directory(file, "layout");
  std::vector<std::string> names;
  for (const auto& e : entries) {
    names.push_back(e.name);
    CHECK(e.offset % 64 == 0);  // storages aligned as PyTorch aligns them
  }
  CHECK(names == std::vector<std::string>{"archive/data.pkl", "archive/byteorder", "archive/data/0", "archive/data/1",
                                          "archive/version"});
  // The pickle starts like torch.save's: protocol 2, then collections.OrderedDict.
  const auto pkl = io::detail::zip_entry_bytes(file, entries[0], "layout");
  const std::string head(reinterpret_cast<const char*>(pkl.data()), 27);
  CHECK(head == std::string("\x80\x02"
                            "ccollections\nOrderedDict\n",
                            27));
}

TEST_CASE("pytorch file: views are read through their offset and strides", "[io][pytorch]") {
  // A [2, 3] transposed view of 8 storage elements, starting at element 2: element (r, c)
  // is storage[2 + r + 2 c], as PyTorch's as_strided reads it.
  TensorSpec t{.numel = 8, .offset = 2, .sizes = {2, 3}, .strides = {1, 2}};
  const StateDict sd = load_pytorch_state_dict_from_bytes(archive(state_dict_pickle({t}), {{"0", float_storage(8)}}));
  const Tensor& w = sd.at("w");
  REQUIRE(w.shape() == Shape{2, 3});
  for (std::int64_t r = 0; r < 2; ++r)
    for (std::int64_t c = 0; c < 3; ++c) CHECK(w.at<float>({r, c}) == static_cast<float>(2 + r + 2 * c));

  // Two tensors sharing one storage (as tied weights are saved), one of them a slice.
  TensorSpec a{.name = "a", .numel = 8, .sizes = {8}, .strides = {1}};
  TensorSpec b{.name = "b", .numel = 8, .offset = 5, .sizes = {3}, .strides = {1}};
  const StateDict shared =
      load_pytorch_state_dict_from_bytes(archive(state_dict_pickle({a, b}), {{"0", float_storage(8)}}));
  CHECK(shared.at("a").at<float>({7}) == 7.0f);
  CHECK(shared.at("b").at<float>({0}) == 5.0f);
  CHECK(shared.at("b").at<float>({2}) == 7.0f);
}

TEST_CASE("pytorch file: what torch.save adds around the tensors is accepted", "[io][pytorch]") {
  // _metadata set by BUILD on the OrderedDict, memo puts and gets, a parameter, a long
  // storage, protocol 4 framing: all from real torch.save output.
  Pickle p;
  p.op(0x80).op(4).op(0x95).raw(std::string(8, '\0'));
  p.ordered_dict().op('q').op(0).op('(');
  p.str("p").global("torch._utils", "_rebuild_parameter").op('(');
  tensor(p, {.sizes = {6}, .strides = {1}}).op(0x88).op('h').op(0).op('t').op('R');
  p.str("n");
  tensor(p, {.storage_type = "LongStorage", .key = "1", .numel = 1, .sizes = {}, .strides = {}});
  p.op('u')
      .op('}')
      .str("_metadata")
      .ordered_dict()
      .str("")
      .op('}')
      .str("version")
      .op('K')
      .op(1)
      .op('s')
      .op('s')
      .op('s');
  p.op('b').op('.');
  Bytes one(8);
  one[0] = std::byte{42};
  const StateDict sd = load_pytorch_state_dict_from_bytes(archive(p.bytes(), {{"0", float_storage(6)}, {"1", one}}));
  REQUIRE(sd.size() == 2);
  CHECK(sd.at("p").at<float>({5}) == 5.0f);
  CHECK(sd.at("n").dtype() == DType::int64);
  CHECK(sd.integer("n") == 42);
}
