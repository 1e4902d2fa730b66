#include <tbb/global_control.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <optional>
#include <string>
#include <tinynet/tinynet.hpp>

#include "thread_count_restorer.hpp"

using namespace tinynet;
using tinynet::testing::ThreadCountRestorer;

namespace {

/// Sets (or unsets, for nullopt) an environment variable for one scope, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) saved_ = old;
    if (value)
      ::setenv(name, value->c_str(), 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (saved_)
      ::setenv(name_, saved_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> saved_;
};

std::size_t tbb_limit() { return tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism); }

}  // namespace

TEST_CASE("threading: set_num_threads sets the count and caps oneTBB", "[threading]") {
  ThreadCountRestorer restore;
  CHECK(get_num_threads() >= 1);
  for (int n : {1, 3, 2}) {
    set_num_threads(n);
    CHECK(get_num_threads() == n);
    CHECK(tbb_limit() == static_cast<std::size_t>(n));
  }
}

TEST_CASE("threading: bad thread counts are rejected", "[threading][errors]") {
  ThreadCountRestorer restore;
  const int before = get_num_threads();
  for (int n : {0, -1, -64}) {
    INFO(n);
    CHECK_THROWS_AS(set_num_threads(n), ValueError);
    CHECK_THROWS_WITH(set_num_threads(n),
                      Catch::Contains("set_num_threads") && Catch::Contains("got " + std::to_string(n)));
  }
  CHECK(get_num_threads() == before);
}

TEST_CASE("threading: TINYNET_NUM_THREADS is parsed strictly", "[threading]") {
  const char* var = "TINYNET_NUM_THREADS";
  {
    ScopedEnv env(var, std::nullopt);
    CHECK(detail::threads_from_env(var) == 0);
  }
  {
    ScopedEnv env(var, "");
    CHECK(detail::threads_from_env(var) == 0);
  }
  for (const char* good : {"1", "4", "64"}) {
    ScopedEnv env(var, good);
    CHECK(detail::threads_from_env(var) == std::stoi(good));
  }
  for (const char* bad : {"abc", "0", "-2", "4x", "2.5", "99999", "x4"}) {
    INFO("TINYNET_NUM_THREADS=" << bad);
    ScopedEnv env(var, bad);
    CHECK_THROWS_AS(detail::threads_from_env(var), ValueError);
    CHECK_THROWS_WITH(detail::threads_from_env(var),
                      Catch::Contains("TINYNET_NUM_THREADS='" + std::string(bad) + "'") &&
                          Catch::Contains("not a positive thread count"));
  }
}

TEST_CASE("threading: the environment names where the count came from", "[threading]") {
  {
    ScopedEnv tn("TINYNET_NUM_THREADS", "3");
    ScopedEnv omp("OMP_NUM_THREADS", "5");
    const ThreadSource s = threads_from_environment();
    CHECK(s.threads == 3);
    CHECK(std::string(s.source) == "TINYNET_NUM_THREADS");
  }
  {
    ScopedEnv tn("TINYNET_NUM_THREADS", std::nullopt);
    ScopedEnv omp("OMP_NUM_THREADS", "5");
    const ThreadSource s = threads_from_environment();
    CHECK(s.threads == 5);
    CHECK(std::string(s.source) == "OMP_NUM_THREADS");
  }
  {
    ScopedEnv tn("TINYNET_NUM_THREADS", std::nullopt);
    ScopedEnv omp("OMP_NUM_THREADS", std::nullopt);
    const ThreadSource s = threads_from_environment();
    CHECK(s.threads >= 1);
    CHECK(std::string(s.source) == "hardware");
  }
  {
    ScopedEnv omp("OMP_NUM_THREADS", "many");
    ScopedEnv tn("TINYNET_NUM_THREADS", std::nullopt);
    CHECK_THROWS_WITH(threads_from_environment(), Catch::Contains("OMP_NUM_THREADS='many'"));
  }
}
