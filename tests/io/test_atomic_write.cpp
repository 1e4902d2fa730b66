// Atomic writes: a failed save leaves the previous file byte-for-byte and no temporary
// file behind. Failures are real ones from the kernel: a file-size limit that makes
// write() fail midway (RLIMIT_FSIZE, EFBIG), a rename onto a non-empty directory, a
// directory that does not exist. Leftovers of killed writers are found by their lock.

#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <csignal>

#include "io/io_test_support.hpp"

using namespace tinynet;
using namespace io_test;

namespace {

StateDict small_dict(double v) {
  StateDict sd;
  sd.insert("w", full({4}, v));
  return sd;
}

// Runs `f` with writes beyond `limit` bytes per file failing with EFBIG (SIGXFSZ ignored
// so the process survives), then restores the limit and the signal.
template <typename F>
void with_file_size_limit(rlim_t limit, F&& f) {
  rlimit old{};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
  auto* old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit lowered = old;
  lowered.rlim_cur = limit;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &lowered) == 0);
  try {
    f();
  } catch (...) {
    ::setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, old_handler);
    throw;
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
}

}  // namespace

TEST_CASE("io atomic write: a save replaces the file and leaves nothing else", "[io][atomic]") {
  TempDir dir;
  save_state_dict(small_dict(1), dir / "w.tn");
  save_state_dict(small_dict(2), dir / "w.tn");
  CHECK(load_state_dict_file(dir / "w.tn").at("w").data<float>()[0] == 2.0f);
  CHECK(dir.listing() == std::vector<std::string>{"w.tn"});
}

TEST_CASE("io atomic write: a relative path saves into the current directory", "[io][atomic]") {
  TempDir dir;
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  save_state_dict(small_dict(3), "rel.tn");
  std::filesystem::current_path(cwd);
  CHECK(load_state_dict_file(dir / "rel.tn").at("w").data<float>()[0] == 3.0f);
  CHECK(dir.listing() == std::vector<std::string>{"rel.tn"});
}

TEST_CASE("io atomic write: a write that fails midway leaves the previous file intact", "[io][atomic]") {
  TempDir dir;
  const auto target = dir / "model.tn";
  save_state_dict(small_dict(1), target);
  const Bytes before = read_bytes(target);

  StateDict big;
  big.insert("w", zeros({1 << 18}));  // 1 MiB: the write fails after the first 64 KiB
  with_file_size_limit(64 * 1024, [&] {
    CHECK_THROWS_MATCHES(save_state_dict(big, target), FileError,
                         Says("save_state_dict: writing '" + target.string() + "'") && Says("File too large"));
  });
  CHECK(read_bytes(target) == before);
  CHECK(dir.listing() == std::vector<std::string>{"model.tn"});
  CHECK(load_state_dict_file(target).at("w").data<float>()[0] == 1.0f);

  // Without the limit the same save goes through.
  save_state_dict(big, target);
  CHECK(load_state_dict_file(target).at("w").numel() == (1 << 18));
}

TEST_CASE("io atomic write: a failed rename removes the temporary file", "[io][atomic]") {
  TempDir dir;
  const auto target = dir / "taken";
  std::filesystem::create_directory(target);
  save_state_dict(small_dict(1), target / "inside.tn");  // makes the directory non-empty
  CHECK_THROWS_MATCHES(save_state_dict(small_dict(2), target), FileError,
                       Says("renaming the temporary file over '" + target.string() + "'"));
  CHECK(dir.listing() == std::vector<std::string>{"taken"});
  CHECK(load_state_dict_file(target / "inside.tn").at("w").data<float>()[0] == 1.0f);
}

TEST_CASE("io atomic write: a directory that does not exist", "[io][atomic]") {
  TempDir dir;
  const auto target = dir / "gone" / "w.tn";
  CHECK_THROWS_MATCHES(
      save_state_dict(small_dict(1), target), FileError,
      Says("cannot create a temporary file next to '" + target.string() + "'") && Says("No such file or directory"));
  CHECK_THROWS_MATCHES(save_state_dict(small_dict(1), dir.path() / ""), FileError, Says("does not name a file"));
}

TEST_CASE("io atomic write: a stray temporary file from a crash changes nothing", "[io][atomic]") {
  // A crash between creating the temporary file and the rename leaves such a file beside
  // the target; the target itself is still the previous, complete file.
  TempDir dir;
  save_state_dict(small_dict(5), dir / "w.tn");
  Bytes partial = save_state_dict_to_bytes(small_dict(6));
  partial.resize(partial.size() / 2);
  write_bytes(dir / ".w.tn.tmp.1.0", partial);
  CHECK(load_state_dict_file(dir / "w.tn").at("w").data<float>()[0] == 5.0f);
  save_state_dict(small_dict(7), dir / "w.tn");
  CHECK(load_state_dict_file(dir / "w.tn").at("w").data<float>()[0] == 7.0f);
}

TEST_CASE("io atomic write: remove_stale_temp_files removes leftovers nobody holds, not writes in progress",
          "[io][atomic]") {
  TempDir dir;
  save_state_dict(small_dict(5), dir / "w.tn");
  write_bytes(dir / ".w.tn.tmp.1.0", Bytes(10));       // a killed writer's (PID 1: a container's)
  write_bytes(dir / ".w.tn.tmp.999999.3", Bytes(10));  // any PID, any namespace
  write_bytes(dir / ".w.tn.tmp.77.0", Bytes(10));      // a write in progress: held below
  write_bytes(dir / ".other.tn.tmp.1.0", Bytes(10));   // another target's: not ours to judge
  io::detail::Fd held(::open((dir / ".w.tn.tmp.77.0").c_str(), O_RDONLY));
  REQUIRE(::flock(held.get(), LOCK_EX) == 0);

  auto removed = io::remove_stale_temp_files(dir / "w.tn");
  std::sort(removed.begin(), removed.end());
  CHECK(removed == std::vector<std::filesystem::path>{dir / ".w.tn.tmp.1.0", dir / ".w.tn.tmp.999999.3"});
  auto left = dir.listing();
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{".other.tn.tmp.1.0", ".w.tn.tmp.77.0", "w.tn"});
  CHECK(load_state_dict_file(dir / "w.tn").at("w").data<float>()[0] == 5.0f);

  held = io::detail::Fd();  // the writer is gone
  CHECK(io::remove_stale_temp_files(dir / "w.tn") == std::vector<std::filesystem::path>{dir / ".w.tn.tmp.77.0"});
  CHECK(io::remove_stale_temp_files(dir / "absent" / "w.tn").empty());
}
