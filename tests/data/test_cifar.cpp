// CIFAR-10 files in its binary format, written here: a few records per batch file, and the
// archive made from them, served by a local HTTP server (nothing leaves this machine).

#include <catch2/catch.hpp>
#include <sstream>
#include <tinynet/data/cifar.hpp>
#include <tinynet/data/dataloader.hpp>

#include "data/helpers.hpp"

using namespace tinynet;
using namespace tinynet::data;
using namespace test_data;
using Catch::Contains;

namespace {

const std::vector<std::string> kFiles = cifar10_source().files;

// `n` records whose label is (first + i) % 10 and whose pixel j is (first + i + j) % 256.
Bytes records(int first, int n) {
  Bytes out;
  for (int i = 0; i < n; ++i) {
    out.push_back(static_cast<unsigned char>((first + i) % 10));
    for (int j = 0; j < 3072; ++j) out.push_back(static_cast<unsigned char>((first + i + j) % 256));
  }
  return out;
}

// Batch file k (0..4 training, 5 test) holds 3 records starting at 10k.
Bytes batch_file(std::size_t k) { return records(static_cast<int>(10 * k), 3); }

void write_batches(const fs::path& root) {
  for (std::size_t k = 0; k < kFiles.size(); ++k) write_file(root / "cifar-10-batches-bin" / kFiles[k], batch_file(k));
}

Bytes archive(const std::vector<std::string>& files) {
  Bytes tar = tar_member("cifar-10-batches-bin/", {}, '5');
  for (std::size_t k = 0; k < kFiles.size(); ++k)
    if (std::find(files.begin(), files.end(), kFiles[k]) != files.end())
      tar = concat(tar, tar_member("cifar-10-batches-bin/" + kFiles[k], batch_file(k)));
  tar = concat(tar, tar_member("cifar-10-batches-bin/batches.meta.txt", {'c', 'a', 't', '\n'}));
  return gzip(concat(tar, tar_end()));
}

std::string md5_of(const Bytes& b) {
  Md5 m;
  m.update(b.data(), b.size());
  return m.hex_digest();
}

CIFAR10Options download_from(const std::string& url, const std::string& md5) {
  CIFAR10Options o;
  o.download = true;
  o.fetch.log = nullptr;
  o.fetch.download.connect_timeout_s = 5;
  o.fetch.download.timeout_s = 30;
  ArchiveSource s = cifar10_source();
  s.urls = {url};
  s.md5 = md5;
  o.source = s;
  return o;
}

}  // namespace

TEST_CASE("CIFAR-10: the binary batches read as [3, 32, 32] bytes and labels, per split", "[cifar]") {
  TempDir tmp;
  write_batches(tmp.path());
  const CIFAR10 train(tmp.path());
  REQUIRE(train.size() == 15);
  CHECK(train.image_shape() == Shape{3, 32, 32});
  CHECK(train.pixels().size() == 15 * 3072);
  const Batch b = train.get_batch(std::vector<std::int64_t>{0, 4, 14});
  REQUIRE(b.data.shape() == Shape{3, 3, 32, 32});
  // Sample 4 is record 1 of data_batch_2.bin: first index 11, label 1, pixel j = (11 + j) % 256.
  CHECK(b.target.data<std::int64_t>()[1] == 1);
  const float* px = b.data.data<float>() + 3072;
  CHECK(px[0] == 11.0f / 255.0f);                                                       // red, row 0, column 0
  CHECK(px[1024 + 32 * 2 + 5] == static_cast<float>((11 + 1024 + 69) % 256) / 255.0f);  // green, row 2, column 5
  CHECK(b.target.data<std::int64_t>()[2] == (40 + 2) % 10);

  const CIFAR10 test(tmp.path(), {.train = false});
  REQUIRE(test.size() == 3);
  CHECK(test.targets().data<std::int64_t>()[0] == 0);  // first index 50: label 0
  CHECK(test.get_batch(std::vector<std::int64_t>{2}).data.data<float>()[3] == static_cast<float>(55) / 255.0f);

  CHECK(CIFAR10::classes().size() == 10);
  CHECK(std::string(CIFAR10::classes()[3]) == "cat");
  CHECK(CIFAR10::normalize().channels() == 3);
  const CIFAR10 normalized(tmp.path(), {.train = false, .transform = CIFAR10::normalize()});
  CHECK(normalized.get_batch(std::vector<std::int64_t>{0}).data.data<float>()[1024] ==
        CIFAR10::normalize()(static_cast<float>(50 + 1024 % 256) / 255.0f, 1));
}

TEST_CASE("CIFAR-10: malformed files are errors naming the file and the record", "[cifar][errors]") {
  TempDir tmp;
  write_batches(tmp.path());
  const fs::path test_file = tmp / "cifar-10-batches-bin/test_batch.bin";
  SECTION("a truncated file") {
    const Bytes b = batch_file(5);
    write_file(test_file, Bytes(b.begin(), b.end() - 10));
    CHECK_THROWS_AS(CIFAR10(tmp.path(), {.train = false}), FormatError);
    CHECK_THROWS_WITH(CIFAR10(tmp.path(), {.train = false}),
                      Contains("test_batch.bin' ends inside record 2") && Contains("3073-byte records"));
  }
  SECTION("a label outside 0..9") {
    Bytes b = batch_file(5);
    b[3073] = 10;
    write_file(test_file, b);
    CHECK_THROWS_WITH(CIFAR10(tmp.path(), {.train = false}), Contains("record 1 has label 10, expected 0..9"));
  }
  SECTION("a missing file") {
    fs::remove(tmp / "cifar-10-batches-bin/data_batch_3.bin");
    CHECK_THROWS_AS(CIFAR10(tmp.path()), FileError);
    CHECK_THROWS_WITH(CIFAR10(tmp.path()),
                      Contains("CIFAR-10: no data_batch_3.bin in") && Contains(".download = true"));
  }
}

TEST_CASE("CIFAR-10: the canonical archive and its published MD5", "[cifar][fetch]") {
  const ArchiveSource s = cifar10_source();
  CHECK(s.urls == std::vector<std::string>{"https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"});
  CHECK(s.md5 == "c32a1d4ab5d03f1284b67883e8d87530");
  CHECK(s.files.size() == 6);
}

TEST_CASE("CIFAR-10: download fetches the archive, checks its MD5 and unpacks the batches", "[cifar][fetch]") {
  TempDir tmp;
  const Bytes good = archive(kFiles);
  LocalHttpServer server({{"/cifar.tar.gz", {200, good}}});
  const CIFAR10 train(tmp / "data", download_from(server.url("/cifar.tar.gz"), md5_of(good)));
  CHECK(train.size() == 15);
  CHECK(server.requests() == 1);
  for (std::size_t k = 0; k < kFiles.size(); ++k)
    CHECK(read_file(tmp / "data/cifar-10-batches-bin" / kFiles[k]) == batch_file(k));
  CHECK(read_file(tmp / "data/cifar-10-binary.tar.gz") == good);
  CHECK(!fs::exists(tmp / "data/cifar-10-batches-bin/batches.meta.txt"));  // only what the data set needs

  // Files present: no network. A lost file: unpacked again from the archive kept, no download.
  CHECK(CIFAR10(tmp / "data", download_from(server.url("/cifar.tar.gz"), md5_of(good))).size() == 15);
  fs::remove(tmp / "data/cifar-10-batches-bin/test_batch.bin");
  CIFAR10Options test_split = download_from(server.url("/cifar.tar.gz"), md5_of(good));
  test_split.train = false;
  CHECK(CIFAR10(tmp / "data", test_split).size() == 3);
  CHECK(server.requests() == 1);
}

TEST_CASE("CIFAR-10: an archive with the wrong MD5 is refused and nothing is unpacked", "[cifar][fetch][errors]") {
  TempDir tmp;
  const Bytes good = archive(kFiles);
  Bytes tampered = archive(kFiles);
  tampered[tampered.size() / 2] ^= 1;
  LocalHttpServer server({{"/tampered.tar.gz", {200, tampered}}, {"/good.tar.gz", {200, good}}});
  try {
    CIFAR10(tmp / "data", download_from(server.url("/tampered.tar.gz"), md5_of(good)));
    FAIL("an archive with the wrong MD5 was accepted");
  } catch (const FetchError& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK_THAT(msg, Contains("CIFAR-10: could not obtain cifar-10-binary.tar.gz"));
    CHECK_THAT(msg, Contains("/tampered.tar.gz: MD5 mismatch: expected " + md5_of(good) + ", got " + md5_of(tampered)));
  }
  // Neither the download nor a temporary file is left: only the (empty) folder for the batches.
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(tmp / "data")) left.push_back(e.path().filename().string());
  CHECK(left == std::vector<std::string>{"cifar-10-batches-bin"});
  CHECK(fs::is_empty(tmp / "data/cifar-10-batches-bin"));
  CHECK_THROWS_WITH(CIFAR10(tmp / "data", download_from(server.url("/missing"), md5_of(good))),
                    Contains("/missing: ") && Contains("404"));

  // A present archive with the wrong MD5 is moved aside and a good one fetched.
  write_file(tmp / "data/cifar-10-binary.tar.gz", tampered);
  CHECK(CIFAR10(tmp / "data", download_from(server.url("/good.tar.gz"), md5_of(good))).size() == 15);
  CHECK(read_file(tmp / "data/cifar-10-binary.tar.gz.bad-md5") == tampered);
}

TEST_CASE("CIFAR-10: a damaged or incomplete archive is a FormatError, and no partial file is left",
          "[cifar][fetch][errors]") {
  TempDir tmp;
  SECTION("truncated") {
    const Bytes full = archive(kFiles);
    const Bytes cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(full.size() / 2));
    LocalHttpServer server({{"/a.tar.gz", {200, cut}}});
    CHECK_THROWS_AS(CIFAR10(tmp / "data", download_from(server.url("/a.tar.gz"), md5_of(cut))), FormatError);
    for (const auto& e : fs::directory_iterator(tmp / "data/cifar-10-batches-bin"))
      CHECK(e.path().filename().string().rfind(".", 0) != 0);  // no temporary files
  }
  SECTION("lacking a batch") {
    const Bytes partial = archive({"data_batch_1.bin", "data_batch_2.bin", "test_batch.bin"});
    LocalHttpServer server({{"/a.tar.gz", {200, partial}}});
    CHECK_THROWS_WITH(CIFAR10(tmp / "data", download_from(server.url("/a.tar.gz"), md5_of(partial))),
                      Contains("has no cifar-10-batches-bin/data_batch_3.bin, cifar-10-batches-bin/data_batch_4.bin, "
                               "cifar-10-batches-bin/data_batch_5.bin"));
  }
}

TEST_CASE("CIFAR-10: batches through a DataLoader", "[cifar]") {
  TempDir tmp;
  write_batches(tmp.path());
  DataLoader loader(CIFAR10(tmp.path()), {.batch_size = 4, .shuffle = true, .seed = 2});
  std::int64_t seen = 0;
  for (auto& b : loader) {
    CHECK(b.data.shape() == Shape{b.target.numel(), 3, 32, 32});
    seen += b.target.numel();
  }
  CHECK(seen == 15);
}
