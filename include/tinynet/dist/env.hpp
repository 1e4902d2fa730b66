#pragma once
/// \file
/// The launch environment: the variables torchrun, the Kubeflow operators (PyTorchJob,
/// TrainJob) and people starting ranks by hand set. Read once, validated, every error
/// naming the variable.

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>

#include "tinynet/dist/error.hpp"

namespace tinynet::dist {

/// What `env://` reads.
struct LaunchEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;            ///< LOCAL_RANK, 0 when unset
  std::string master_addr;       ///< MASTER_ADDR
  int master_port = 0;           ///< MASTER_PORT
  bool use_agent_store = false;  ///< TORCHELASTIC_USE_AGENT_STORE=True: the launcher hosts the store
  int restart_count = 0;         ///< TORCHELASTIC_RESTART_COUNT, 0 when unset
};

namespace detail {

inline std::optional<std::string> env_var(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

/// The integer in variable `name`, within [lo, hi]; nullopt when unset.
inline std::optional<long long> env_int(const char* name, long long lo, long long hi, const char* meaning) {
  const auto v = env_var(name);
  if (!v) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(v->c_str(), &end, 10);
  TINYNET_CHECK(DistConfigError, !v->empty() && *end == '\0' && errno == 0, "environment variable ", name, "='", *v,
                "' is not an integer (", meaning, ")");
  TINYNET_CHECK(DistConfigError, n >= lo && n <= hi, "environment variable ", name, "=", n,
                " is out of range: ", meaning, " must be in [", lo, ", ", hi, "]");
  return n;
}

inline long long require_int(const char* name, long long lo, long long hi, const char* meaning) {
  const auto n = env_int(name, lo, hi, meaning);
  TINYNET_CHECK(DistConfigError, n.has_value(), "environment variable ", name, " is not set (", meaning,
                "; torchrun and the Kubeflow training operators set it, or set it yourself)");
  return *n;
}

}  // namespace detail

/// The world-size the environment asks for: WORLD_SIZE, or 1 when unset.
inline int world_size_from_env() {
  return static_cast<int>(detail::env_int("WORLD_SIZE", 1, 1 << 20, "the number of processes").value_or(1));
}

/// Reads and checks the launch environment. `need_master`: MASTER_ADDR and MASTER_PORT
/// are required (env://); file:// does without them.
inline LaunchEnv read_launch_env(bool need_master = true) {
  LaunchEnv e;
  e.world_size = static_cast<int>(detail::require_int("WORLD_SIZE", 1, 1 << 20, "the number of processes"));
  e.rank = static_cast<int>(detail::require_int("RANK", 0, 1 << 20, "this process's rank, 0 to WORLD_SIZE-1"));
  TINYNET_CHECK(DistConfigError, e.rank < e.world_size, "environment variable RANK=", e.rank,
                " is not below WORLD_SIZE=", e.world_size, " (ranks are 0 to WORLD_SIZE-1)");
  e.local_rank = static_cast<int>(detail::env_int("LOCAL_RANK", 0, 1 << 20, "the rank on this node").value_or(0));
  if (const auto lws = detail::env_int("LOCAL_WORLD_SIZE", 1, 1 << 20, "processes on this node"))
    TINYNET_CHECK(DistConfigError, e.local_rank < *lws, "environment variable LOCAL_RANK=", e.local_rank,
                  " is not below LOCAL_WORLD_SIZE=", *lws);
  if (need_master) {
    const auto addr = detail::env_var("MASTER_ADDR");
    TINYNET_CHECK(DistConfigError, addr && !addr->empty(),
                  "environment variable MASTER_ADDR is not set (the host name or IP address of rank 0, which hosts "
                  "the rendezvous store; torchrun and the Kubeflow training operators set it)");
    e.master_addr = *addr;
    e.master_port = static_cast<int>(
        detail::require_int("MASTER_PORT", 1, 65535, "the TCP port of the rendezvous store on MASTER_ADDR"));
  }
  if (const auto agent = detail::env_var("TORCHELASTIC_USE_AGENT_STORE")) {
    TINYNET_CHECK(DistConfigError, *agent == "True" || *agent == "False" || agent->empty(),
                  "environment variable TORCHELASTIC_USE_AGENT_STORE='", *agent, "' is neither True nor False");
    e.use_agent_store = *agent == "True";
  }
  e.restart_count = static_cast<int>(
      detail::env_int("TORCHELASTIC_RESTART_COUNT", 0, 1 << 20, "how often torchrun restarted the workers")
          .value_or(0));
  return e;
}

}  // namespace tinynet::dist
