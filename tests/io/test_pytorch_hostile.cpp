// Hostile PyTorch files: every one is a FormatError naming the file and the problem, with
// nothing executed and no allocation larger than the file.

#include <catch2/catch.hpp>

#include "io/pytorch_test_support.hpp"

using namespace tinynet;
using namespace io_test;

namespace {

const Bytes kSixFloats = float_storage(6);

// Rejected from memory and from disk with a message containing `what` and the file's name,
// no tensor allocated, and no heap allocation above max(file size, 4 KiB).
void expect_rejected(const Bytes& file, const std::string& what) {
  INFO("expecting: " << what);
  {
    AllocationWatch w;
    CHECK_THROWS_MATCHES(load_pytorch_state_dict_from_bytes(file, "evil.pt"), FormatError,
                         Says(what) && Says("evil.pt"));
    CHECK(w.tensor_requests() == 0);
    CHECK(w.largest_new() <= std::max<std::size_t>(file.size(), 4096));
  }
  TempDir dir;
  write_bytes(dir / "evil.pt", file);
  AllocationWatch w;
  CHECK_THROWS_MATCHES(load_pytorch_state_dict(dir / "evil.pt"), FormatError, Says(what) && Says("evil.pt"));
  CHECK(w.largest_new() <= std::max<std::size_t>(file.size(), 4096));
}

Bytes with_tensor(const TensorSpec& t, Bytes storage = kSixFloats) {
  return archive(state_dict_pickle({t}), {{t.key, std::move(storage)}});
}

}  // namespace

TEST_CASE("pytorch hostile: globals that run code are refused by name", "[io][pytorch][hostile]") {
  for (const auto& [module, name] : std::vector<std::pair<std::string, std::string>>{
           {"os", "system"}, {"builtins", "eval"}, {"subprocess", "Popen"}, {"posix", "system"}, {"torch", "load"}}) {
    // The classic payload: os.system("touch PWNED"), as the pickle's whole content.
    Pickle p;
    p.proto().global(module, name).str("touch PWNED").op(0x85).op('R').op('.');
    expect_rejected(archive(p.bytes(), {}), "refuses the global '" + module + "." + name + "'");
    CHECK_FALSE(std::filesystem::exists("PWNED"));
    // The same call hidden inside an otherwise valid state_dict, as a tensor's hooks.
    Pickle q;
    q.proto().ordered_dict().op('(').str("w").global("torch._utils", "_rebuild_tensor_v2").op('(');
    q.op('(').str("storage").global("torch", "FloatStorage").str("0").str("cpu").i64(6).op('t').op('Q');
    q.i64(0).ints({6}).ints({1}).op(0x89).global(module, name).str("id").op(0x85).op('R').op('t').op('R');
    q.op('u').op('.');
    expect_rejected(archive(q.bytes(), {{"0", kSixFloats}}), "refuses the global '" + module + "." + name + "'");
  }
  // STACK_GLOBAL (protocol 4) is checked the same way.
  Pickle s;
  s.op(0x80).op(4).str("os").str("system").op(0x93).str("id").op(0x85).op('R').op('.');
  expect_rejected(archive(s.bytes(), {}), "refuses the global 'os.system'");
}

TEST_CASE("pytorch hostile: unknown and unsupported opcodes", "[io][pytorch][hostile]") {
  // INST and OBJ build arbitrary objects; PERSID (text), EXT1 and a byte that is no opcode.
  for (unsigned char op :
       {static_cast<unsigned char>('i'), static_cast<unsigned char>('o'), static_cast<unsigned char>('P'),
        static_cast<unsigned char>(0x82), static_cast<unsigned char>(0xff)}) {
    Pickle p;
    p.proto().op(op).raw("os\nsystem\n").op('.');
    expect_rejected(archive(p.bytes(), {}), "unknown or unsupported pickle opcode 0x");
  }
  Pickle bad_proto;
  bad_proto.op(0x80).op(9).op('.');
  expect_rejected(archive(bad_proto.bytes(), {}), "pickle protocol 9");
}

TEST_CASE("pytorch hostile: malformed pickles", "[io][pytorch][hostile]") {
  expect_rejected(archive(Pickle().proto().op('R').op('.').bytes(), {}), "needs a value the stack does not have");
  expect_rejected(archive(Pickle().proto().op('t').op('.').bytes(), {}), "no MARK");
  expect_rejected(archive(Pickle().proto().op('h').op(7).op('.').bytes(), {}), "memo entry 7");
  expect_rejected(archive(Pickle().proto().str("abc").bytes(), {}), "truncated pickle");
  expect_rejected(archive(Pickle().proto().op('X').u32(0xFFFFFFF0).op('.').bytes(), {}), "truncated pickle");
  expect_rejected(archive(Pickle().proto().ints({1}).op('.').bytes(), {}), "does not hold a state_dict");
  Pickle not_tensor;
  not_tensor.proto().ordered_dict().str("lr").op('K').op(1).op('s').op('.');
  expect_rejected(archive(not_tensor.bytes(), {}), "entry 'lr' is not a tensor");
  // A dict that holds itself: harmless (no recursion), and not a state_dict of tensors.
  Pickle cycle;
  cycle.proto().op('}').op('q').op(0).str("self").op('h').op(0).op('s').op('.');
  expect_rejected(archive(cycle.bytes(), {}), "entry 'self' is not a tensor");
}

TEST_CASE("pytorch hostile: storages shorter than their tensors", "[io][pytorch][hostile]") {
  expect_rejected(with_tensor({.numel = 6}, float_storage(5)), "declares 6 elements of 4 bytes, its entry holds 20");
  expect_rejected(with_tensor({.numel = 6, .sizes = {3, 3}, .strides = {3, 1}}),
                  "reads element 8 of storage '0', which has 6 elements");
  expect_rejected(with_tensor({.numel = 6, .offset = 1}), "the storage is shorter than its tensor");
  expect_rejected(archive(state_dict_pickle({TensorSpec{}}), {{"1", kSixFloats}}),
                  "its storage '0' is not in the archive");
}

TEST_CASE("pytorch hostile: negative and overflowing sizes, strides and offsets", "[io][pytorch][hostile]") {
  constexpr std::int64_t kBig = std::int64_t{1} << 62;
  expect_rejected(with_tensor({.offset = -1}), "negative storage offset -1");
  expect_rejected(with_tensor({.sizes = {2, 3}, .strides = {-3, 1}}), "negative stride -3");
  expect_rejected(with_tensor({.sizes = {-2, -3}, .strides = {3, 1}}), "negative size -2");
  expect_rejected(with_tensor({.numel = -6}), "declares -6 elements");
  expect_rejected(with_tensor({.numel = kBig}), "declares 4611686018427387904 elements");
  expect_rejected(with_tensor({.sizes = {kBig, 4}, .strides = {4, 1}}), "its sizes overflow 64 bits");
  expect_rejected(with_tensor({.sizes = {3, 2}, .strides = {kBig, 1}}), "overflow 64 bits");
  expect_rejected(with_tensor({.offset = INT64_MAX - 1, .sizes = {2, 3}, .strides = {3, 1}}), "overflow 64 bits");
  expect_rejected(with_tensor({.sizes = {2, 3}, .strides = {3}}), "2 sizes but 1 strides");
  expect_rejected(with_tensor({.sizes = {1, 1, 1, 1, 1, 1, 6}, .strides = {6, 6, 6, 6, 6, 6, 1}}), "rank 7");
  // A zero-stride view of one element that claims 2^40 elements: more than the file holds.
  expect_rejected(with_tensor({.sizes = {std::int64_t{1} << 40}, .strides = {0}}), "more than the");
  // Many small views of one storage that together would hold more than the file.
  std::vector<TensorSpec> views;
  for (int i = 0; i < 64; ++i) {
    std::string name = "v";  // not "v" + to_string(i): a false -Wrestrict in GCC 12
    name += std::to_string(i);
    views.push_back({.name = name, .numel = 6, .sizes = {1024}, .strides = {0}});
  }
  expect_rejected(archive(state_dict_pickle(views), {{"0", kSixFloats}}), "views that repeat their storage");
}

TEST_CASE("pytorch hostile: dtypes tinynet does not read are named", "[io][pytorch][hostile]") {
  expect_rejected(
      with_tensor({.storage_type = "HalfStorage"}),
      "torch.HalfStorage, which tinynet does not read (it reads float32, float64, int32, int64 and bfloat16 tensors)");
  expect_rejected(with_tensor({.storage_type = "UntypedStorage"}), "torch.UntypedStorage");
}

TEST_CASE("pytorch hostile: truncated and corrupt archives", "[io][pytorch][hostile]") {
  const Bytes good = with_tensor({});
  REQUIRE_NOTHROW(load_pytorch_state_dict_from_bytes(good));
  // Every truncation is an error, never a crash.
  for (std::size_t n = 0; n < good.size(); ++n) {
    const Bytes cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    CHECK_THROWS_MATCHES(load_pytorch_state_dict_from_bytes(cut, "cut.pt"), FormatError, Says("cut.pt"));
  }
  expect_rejected(Bytes(good.begin(), good.begin() + 100), "not a zip archive");
  // A flipped byte in a storage: the entry's CRC-32 no longer matches.
  Bytes flipped = good;
  const auto entries = io::detail::read_zip_directory(good, "good");
  flipped[static_cast<std::size_t>(entries[1].offset)] ^= std::byte{1};
  expect_rejected(flipped, "zip entry 'archive/data/0' is corrupt (CRC-32");
  expect_rejected(Bytes(100, std::byte{'x'}), "not a PyTorch state_dict file");
  expect_rejected(save_state_dict_to_bytes(StateDict{}), "is a tinynet file");
  Bytes legacy = {std::byte{0x80}, std::byte{0x02}, std::byte{0x8a}, std::byte{0x0a}, std::byte{0x6c},
                  std::byte{0xfc}, std::byte{0x9c}, std::byte{0x46}, std::byte{0xf9}, std::byte{0x20}};
  expect_rejected(legacy, "legacy (before 1.6) format");
}

TEST_CASE("pytorch hostile: zip entries that declare huge sizes", "[io][pytorch][hostile]") {
  const Bytes good = with_tensor({});
  const auto entries = io::detail::read_zip_directory(good, "good");
  // The central directory follows the last entry's data; patch the sizes of its first record.
  const std::size_t dir = static_cast<std::size_t>(entries.back().offset + entries.back().size);
  REQUIRE(io::detail::get_le<std::uint32_t>(good.data() + dir) == io::detail::kZipCentralSig);
  Bytes bomb = good;
  io::detail::put_le<std::uint32_t>(bomb.data() + dir + 20, 0xFFFFFFF0u);
  io::detail::put_le<std::uint32_t>(bomb.data() + dir + 24, 0xFFFFFFF0u);
  expect_rejected(bomb, "data of 'archive/data.pkl' at offset");
  Bytes deflated = good;
  io::detail::put_le<std::uint16_t>(deflated.data() + dir + 10, 8);
  expect_rejected(deflated, "is compressed (method 8)");
  Bytes many = good;  // the end record announces 60000 entries
  const std::size_t end = good.size() - io::detail::kZipEndSize;
  io::detail::put_le<std::uint16_t>(many.data() + end + 8, 60000);
  io::detail::put_le<std::uint16_t>(many.data() + end + 10, 60000);
  expect_rejected(many, "60000 entries announced");
  Bytes far = good;  // a directory offset past the end
  io::detail::put_le<std::uint32_t>(far.data() + end + 16, 0x7FFFFFFF);
  expect_rejected(far, "central directory at offset 2147483647");
}

namespace {

// `archive`'s entries again, in a ZIP64 archive: the central directory's sizes and offsets
// are 0xFFFFFFFF with the values in ZIP64 extra fields (`size` replaces every entry's
// size there when given), and the end record points to a ZIP64 end record.
Bytes as_zip64(const Bytes& archive, std::uint64_t size = 0) {
  using namespace io::detail;
  Bytes out;
  const auto put = [&](auto v) {
    std::byte b[sizeof v];
    put_le(b, v);
    out.insert(out.end(), b, b + sizeof v);
  };
  struct Written {
    ZipEntry e;
    std::uint64_t local;
  };
  std::vector<Written> written;
  for (const ZipEntry& e : read_zip_directory(archive, "zip64 source")) {
    written.push_back({e, out.size()});
    put(kZipLocalSig), put(std::uint16_t{45}), put(std::uint16_t{0}), put(std::uint16_t{0}), put(std::uint32_t{0});
    put(e.crc), put(std::uint32_t{0xFFFFFFFF}), put(std::uint32_t{0xFFFFFFFF});
    put(static_cast<std::uint16_t>(e.name.size())), put(std::uint16_t{0});
    for (char c : e.name) out.push_back(static_cast<std::byte>(c));
    out.insert(out.end(), archive.begin() + static_cast<std::ptrdiff_t>(e.offset),
               archive.begin() + static_cast<std::ptrdiff_t>(e.offset + e.size));
  }
  const std::uint64_t dir = out.size();
  for (const auto& [e, local] : written) {
    put(kZipCentralSig), put(std::uint16_t{45}), put(std::uint16_t{45}), put(std::uint16_t{0}), put(std::uint16_t{0});
    put(std::uint32_t{0}), put(e.crc), put(std::uint32_t{0xFFFFFFFF}), put(std::uint32_t{0xFFFFFFFF});
    put(static_cast<std::uint16_t>(e.name.size())), put(std::uint16_t{28}), put(std::uint16_t{0});
    put(std::uint16_t{0}), put(std::uint16_t{0}), put(std::uint32_t{0}), put(std::uint32_t{0xFFFFFFFF});
    for (char c : e.name) out.push_back(static_cast<std::byte>(c));
    put(std::uint16_t{1}), put(std::uint16_t{24});
    put(size ? size : e.size), put(size ? size : e.size), put(local);
  }
  const std::uint64_t dir_size = out.size() - dir, end64 = out.size();
  put(kZip64EndSig), put(std::uint64_t{44}), put(std::uint16_t{45}), put(std::uint16_t{45}), put(std::uint32_t{0});
  put(std::uint32_t{0}), put(std::uint64_t{written.size()}), put(std::uint64_t{written.size()}), put(dir_size),
      put(dir);
  put(kZip64LocatorSig), put(std::uint32_t{0}), put(end64), put(std::uint32_t{1});
  put(kZipEndSig), put(std::uint16_t{0}), put(std::uint16_t{0}), put(std::uint16_t{0xFFFF}), put(std::uint16_t{0xFFFF});
  put(std::uint32_t{0xFFFFFFFF}), put(std::uint32_t{0xFFFFFFFF}), put(std::uint16_t{0});
  return out;
}

}  // namespace

TEST_CASE("pytorch file: ZIP64 archives are read, and their huge sizes checked", "[io][pytorch][hostile]") {
  const Bytes good = with_tensor({});
  const StateDict want = load_pytorch_state_dict_from_bytes(good);
  CHECK(bitwise_equal(load_pytorch_state_dict_from_bytes(as_zip64(good), "zip64.pt"), want));
  expect_rejected(as_zip64(good, std::uint64_t{1} << 62), "(4611686018427387904 bytes) runs past the end");
}
