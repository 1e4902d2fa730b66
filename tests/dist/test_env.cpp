#include <catch2/catch.hpp>
#include <cstdlib>
#include <map>
#include <optional>
#include <tinynet/dist/env.hpp>
#include <tinynet/dist/init.hpp>
#include <tinynet/tinynet.hpp>

using namespace tinynet::dist;

namespace {

// Sets the launch variables for one test and restores a clean slate after it.
struct Env {
  static constexpr const char* kNames[] = {"RANK",
                                           "WORLD_SIZE",
                                           "LOCAL_RANK",
                                           "LOCAL_WORLD_SIZE",
                                           "MASTER_ADDR",
                                           "MASTER_PORT",
                                           "TORCHELASTIC_USE_AGENT_STORE",
                                           "TORCHELASTIC_RESTART_COUNT"};
  explicit Env(const std::map<std::string, std::string>& vars) {
    clear();
    for (const auto& [k, v] : vars) ::setenv(k.c_str(), v.c_str(), 1);
  }
  ~Env() { clear(); }
  static void clear() {
    for (const char* n : kNames) ::unsetenv(n);
  }
};

const std::map<std::string, std::string> kGood = {
    {"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "23456"}};

std::map<std::string, std::string> with(std::map<std::string, std::string> m, const std::string& k,
                                        std::optional<std::string> v) {
  if (v)
    m[k] = *v;
  else
    m.erase(k);
  return m;
}

}  // namespace

TEST_CASE("env: a complete environment is read", "[env]") {
  Env e(with(with(kGood, "LOCAL_RANK", "1"), "TORCHELASTIC_USE_AGENT_STORE", "True"));
  const LaunchEnv l = read_launch_env();
  CHECK(l.rank == 1);
  CHECK(l.world_size == 2);
  CHECK(l.local_rank == 1);
  CHECK(l.master_addr == "10.0.0.1");
  CHECK(l.master_port == 23456);
  CHECK(l.use_agent_store);
  CHECK(l.restart_count == 0);
}

TEST_CASE("env: missing or malformed variables are errors naming the variable", "[env]") {
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases = {
      {with(kGood, "RANK", std::nullopt), "RANK is not set"},
      {with(kGood, "WORLD_SIZE", std::nullopt), "WORLD_SIZE is not set"},
      {with(kGood, "MASTER_ADDR", std::nullopt), "MASTER_ADDR is not set"},
      {with(kGood, "MASTER_ADDR", ""), "MASTER_ADDR is not set"},
      {with(kGood, "MASTER_PORT", std::nullopt), "MASTER_PORT is not set"},
      {with(kGood, "MASTER_PORT", "http"), "MASTER_PORT='http' is not an integer"},
      {with(kGood, "MASTER_PORT", "70000"), "MASTER_PORT=70000 is out of range"},
      {with(kGood, "RANK", "2"), "RANK=2 is not below WORLD_SIZE=2"},
      {with(kGood, "RANK", "-1"), "RANK=-1 is out of range"},
      {with(kGood, "RANK", "1x"), "RANK='1x' is not an integer"},
      {with(kGood, "WORLD_SIZE", "0"), "WORLD_SIZE=0 is out of range"},
      {with(with(kGood, "LOCAL_RANK", "2"), "LOCAL_WORLD_SIZE", "2"), "LOCAL_RANK=2 is not below LOCAL_WORLD_SIZE=2"},
      {with(kGood, "TORCHELASTIC_USE_AGENT_STORE", "yes"), "TORCHELASTIC_USE_AGENT_STORE='yes'"},
  };
  for (const auto& [vars, message] : cases) {
    Env e(vars);
    INFO(message);
    CHECK_THROWS_AS(read_launch_env(), DistConfigError);
    CHECK_THROWS_WITH(read_launch_env(), Catch::Contains(message));
  }
}

TEST_CASE("env: file:// needs no MASTER_ADDR; bad backend and init_method are named", "[env]") {
  Env e(with(with(kGood, "MASTER_ADDR", std::nullopt), "MASTER_PORT", std::nullopt));
  CHECK(read_launch_env(false).rank == 1);
  CHECK_THROWS_WITH(init_process_group("mpi"), Catch::Contains("unknown backend 'mpi'"));
  CHECK_THROWS_WITH(init_process_group("gloo", "tcp://x:1"), Catch::Contains("unsupported init_method 'tcp://x:1'"));
  CHECK_THROWS_WITH(init_process_group("gloo", "env://"), Catch::Contains("MASTER_ADDR is not set"));
}

TEST_CASE("env: a single process forms a group of one", "[env]") {
  const int port = TCPStoreServer().port();  // free once the probe is gone
  Env e({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(port)}});
  auto pg = init_process_group("gloo", "env://", std::chrono::seconds(10));
  CHECK(pg->rank() == 0);
  CHECK(pg->size() == 1);
  CHECK(std::string(pg->backend()) == "gloo");
  tinynet::Tensor t = tinynet::full({5}, 2.5);
  pg->allreduce(t, ReduceOp::avg);
  CHECK(t.data<float>()[4] == 2.5f);
  pg->barrier();
}
