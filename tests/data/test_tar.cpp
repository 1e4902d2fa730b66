#include <catch2/catch.hpp>
#include <tinynet/data/tar.hpp>

#include "data/helpers.hpp"

using namespace tinynet::data;
using namespace test_data;
using Catch::Contains;

namespace {

Bytes text(const std::string& s) { return Bytes(s.begin(), s.end()); }

// Every member of the archive at `path`: name -> data (directories as empty strings).
std::map<std::string, std::string> members(const fs::path& path) {
  std::map<std::string, std::string> out;
  TarReader tar(path);
  while (auto m = tar.next()) {
    std::string data;
    char buf[100];
    for (std::size_t n; (n = tar.read(buf, sizeof buf)) > 0;) data.append(buf, n);
    CHECK(data.size() == (m->type == '5' ? 0 : m->size));
    out[m->name] = data;
  }
  return out;
}

Bytes sample_archive() {
  Bytes big(1300);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<unsigned char>(i * 7);
  Bytes a = tar_member("dir/", {}, '5');
  a = concat(a, tar_member("dir/a.txt", text("hello")));
  a = concat(a, tar_member("dir/big.bin", big));
  a = concat(a, tar_member("dir/empty", {}));
  return concat(a, tar_end());
}

}  // namespace

TEST_CASE("tar: members and their data, raw and gzipped", "[tar]") {
  TempDir tmp;
  write_file(tmp / "a.tar", sample_archive());
  write_file(tmp / "a.tar.gz", gzip(sample_archive()));
  for (const char* name : {"a.tar", "a.tar.gz"}) {
    const auto m = members(tmp / name);
    REQUIRE(m.size() == 4);
    CHECK(m.at("dir/") == "");
    CHECK(m.at("dir/a.txt") == "hello");
    CHECK(m.at("dir/empty") == "");
    const std::string& big = m.at("dir/big.bin");
    REQUIRE(big.size() == 1300);
    for (std::size_t i = 0; i < big.size(); ++i) REQUIRE(static_cast<unsigned char>(big[i]) == ((i * 7) & 0xFF));
  }
  TarReader tar(tmp / "a.tar");
  CHECK(tar.next()->type == '5');
  const auto file = tar.next();
  CHECK((file->name == "dir/a.txt" && file->is_file() && file->size == 5));
  CHECK(tar.next()->name == "dir/big.bin");  // an unread member is skipped
}

TEST_CASE("tar: GNU long names and pax headers", "[tar]") {
  TempDir tmp;
  const std::string long_name = "folder/" + std::string(120, 'n') + ".bin";
  Bytes a = tar_member("././@LongLink", text(long_name + '\0'), 'L');
  a = concat(a, tar_member(long_name.substr(0, 100), text("x")));
  a = concat(a, tar_member("PaxHeaders/b", text("30 mtime=1234567890.123456789\n11 path=b2\n"), 'x'));
  a = concat(a, tar_member("b", text("yz")));
  a = concat(a, tar_member("PaxHeaders/global", text("17 comment=none\n"), 'g'));
  a = concat(a, tar_member("c", text("w")));
  write_file(tmp / "long.tar", concat(a, tar_end()));
  const auto m = members(tmp / "long.tar");
  CHECK(m.size() == 3);
  CHECK(m.at(long_name) == "x");
  CHECK(m.at("b2") == "yz");  // the pax path, not the header's name
  CHECK(m.at("c") == "w");

  write_file(
      tmp / "bad-pax.tar",
      concat(concat(tar_member("PaxHeaders/b", text("99 path=b\n"), 'x'), tar_member("b", text("yz"))), tar_end()));
  CHECK_THROWS_WITH(members(tmp / "bad-pax.tar"), Contains("malformed pax attributes"));
}

TEST_CASE("tar: archives written by Python's tarfile (ustar, GNU and pax formats), raw and gzipped", "[tar]") {
  const fs::path seeds = fs::path(__FILE__).parent_path().parent_path() / "fuzz/seeds/tar";
  for (const char* gz : {"", ".gz"}) {
    const auto cifar = members(seeds / (std::string("cifar_like.tar") + gz));
    REQUIRE(cifar.size() == 3);
    const std::string& record = cifar.at("cifar-10-batches-bin/test_batch.bin");
    REQUIRE(record.size() == 3073);
    CHECK(record[0] == 3);
    CHECK(static_cast<unsigned char>(record[3072]) == 255);
    CHECK(cifar.at("cifar-10-batches-bin/batches.meta.txt") == "airplane\n");
    CHECK(cifar.count("cifar-10-batches-bin/"));  // a directory
    CHECK(members(seeds / (std::string("gnu_long_name.tar") + gz)).at("d/" + std::string(120, 'n') + ".bin") ==
          std::string(600, 'x'));
    CHECK(members(seeds / (std::string("pax.tar") + gz)).at("p/" + std::string(130, 'q')) == "hello");
  }
}

TEST_CASE("tar: damaged or truncated archives are FormatErrors naming the archive and member", "[tar][errors]") {
  TempDir tmp;
  const Bytes good = sample_archive();
  const fs::path p = tmp / "bad.tar";
  auto read_all = [&] { members(p); };

  SECTION("a header whose checksum fails") {
    Bytes bad = good;
    bad[512 + 3] ^= 0x20;  // a letter of "dir/a.txt"
    write_file(p, bad);
    CHECK_THROWS_AS(read_all(), FormatError);
    CHECK_THROWS_WITH(read_all(), Contains("bad.tar") && Contains("fails its checksum"));
  }
  SECTION("data cut short") {
    write_file(p, Bytes(good.begin(), good.begin() + 512 * 4 + 100));  // inside big.bin's data
    CHECK_THROWS_WITH(read_all(), Contains("member 'dir/big.bin' is cut short (truncated archive)"));
  }
  SECTION("a header cut short") {
    write_file(p, Bytes(good.begin(), good.begin() + 512 + 200));
    CHECK_THROWS_WITH(read_all(), Contains("ends inside a member header (truncated)"));
  }
  SECTION("no end-of-archive blocks") {
    write_file(p, Bytes(good.begin(), good.end() - 1024));
    CHECK_THROWS_WITH(read_all(), Contains("ends without the two zero blocks"));
  }
  SECTION("a gzip stream cut short") {
    const Bytes gz = gzip(good);
    write_file(p, Bytes(gz.begin(), gz.end() - 20));
    CHECK_THROWS_AS(read_all(), FormatError);
  }
  SECTION("not a tar file") {
    Bytes junk(2048, 'a');
    write_file(p, junk);
    CHECK_THROWS_WITH(read_all(), Contains("not an octal number (not a tar file?)"));
  }
  SECTION("a missing file") { CHECK_THROWS_AS(TarReader(tmp / "none.tar"), FileError); }
}
