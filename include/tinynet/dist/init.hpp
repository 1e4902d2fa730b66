#pragma once
/// \file
/// init_process_group: joins the job's other ranks and returns the process group
/// (torch.distributed.init_process_group, returning the group instead of keeping a
/// global one).
///
/// `env://` reads RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (and LOCAL_RANK) as torchrun
/// and the Kubeflow operators set them. The ranks meet through a TCP store on
/// MASTER_ADDR:MASTER_PORT: rank 0 hosts it, unless TORCHELASTIC_USE_AGENT_STORE=True
/// says torchrun's agent already does (static rendezvous), in which case every rank is a
/// client of the agent's store under "/worker/attempt_<TORCHELASTIC_RESTART_COUNT>/tinynet",
/// a prefix that changes with every restart. `file://DIR` meets through a directory on a
/// shared filesystem instead (a fresh one per run).
///
/// Before any collective, the ranks check that they agree: no RANK twice (a second RANK=0
/// finds the port taken by the first one's store and asks it), the same WORLD_SIZE
/// everywhere, everyone present within the timeout.

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "tinynet/dist/env.hpp"
#include "tinynet/dist/file_store.hpp"
#include "tinynet/dist/gloo_group.hpp"
#include "tinynet/dist/tcp_store.hpp"
#include "tinynet/dist/tcp_store_server.hpp"
#ifdef TINYNET_WITH_NCCL
#include "tinynet/dist/nccl_group.hpp"
#endif

namespace tinynet::dist {

/// PyTorch's default process-group timeout.
inline constexpr Milliseconds kDefaultTimeout = std::chrono::minutes(30);

namespace detail {

/// Registers this rank in `store` and checks the ranks agree; throws DistConfigError on
/// a duplicate RANK or disagreeing WORLD_SIZE, DistTimeoutError naming the ranks that
/// never joined.
inline void rendezvous(Store& store, int rank, int world_size, Milliseconds timeout) {
  const std::string me = "rank " + std::to_string(rank);
  const std::int64_t joined = store.add("joined/" + std::to_string(rank), 1);
  TINYNET_CHECK(DistConfigError, joined == 1, me, ": another process already joined with RANK=", rank,
                " (every process needs its own RANK, 0 to WORLD_SIZE-1; with file://, a directory left by an "
                "earlier run looks the same: give each run a fresh path)");
  // Rank 0 always exists and sets its key first, so every other rank compares with it before
  // publishing its own: when rank 0 sees a mismatch and exits (taking its store with it),
  // the other rank has already read what it needs to say what is wrong.
  if (rank == 0) store.set("world_size/0", std::to_string(world_size));
  const std::string root = store.get("world_size/0", timeout);
  if (rank != 0) store.set("world_size/" + std::to_string(rank), std::to_string(world_size));
  TINYNET_CHECK(DistConfigError, root == std::to_string(world_size), me, ": WORLD_SIZE=", world_size,
                " here but rank 0 has WORLD_SIZE=", root, "; every rank must be given the same WORLD_SIZE");
  std::vector<std::string> keys;
  for (int r = 0; r < world_size; ++r) keys.push_back("world_size/" + std::to_string(r));
  try {
    store.wait(keys, timeout);
  } catch (const DistTimeoutError&) {
    std::string missing;
    for (int r = 0; r < world_size; ++r)
      if (!store.check({keys[static_cast<std::size_t>(r)]}))
        missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    throw DistTimeoutError(me + ": rendezvous: rank(s) " + missing + " of WORLD_SIZE=" + std::to_string(world_size) +
                           " did not join within " + std::to_string(timeout.count() / 1000) +
                           " s (are all WORLD_SIZE processes started, with the same MASTER_ADDR and MASTER_PORT?)");
  }
  if (rank != 0) return;  // rank 0 has compared everyone; the others compared with rank 0
  for (int r = 1; r < world_size; ++r) {
    const std::string theirs = store.get(keys[static_cast<std::size_t>(r)], timeout);
    TINYNET_CHECK(DistConfigError, theirs == std::to_string(world_size), me, ": rank ", r, " has WORLD_SIZE=", theirs,
                  " but rank 0 has WORLD_SIZE=", world_size, "; every rank must be given the same WORLD_SIZE");
  }
}

/// Throws DistConfigError when the tinynet store listening on `port` already has a rank 0
/// under `prefix`: the port is taken by another process started with RANK=0 for this job,
/// not by some other program. Anything else (no store there, another program, no answer
/// within a second) returns, and binding goes on as before.
inline void refuse_second_rank0(int port, const std::string& prefix) {
  bool joined = false;
  try {
    TCPStore probe("127.0.0.1", port, std::chrono::seconds(1), "rank 0");
    joined = probe.check({prefix + "/joined/0"});
  } catch (const Error&) {
    return;
  }
  TINYNET_CHECK(DistConfigError, !joined, "rank 0: another process already joined with RANK=0 and hosts the store",
                " on port ", port, " (every process needs its own RANK, 0 to WORLD_SIZE-1)");
}

}  // namespace detail

/// Joins the job and returns its process group. `backend`: "gloo" (CPU tensors over TCP)
/// or "nccl" (CUDA tensors; builds with TINYNET_WITH_NCCL). `init_method`: "env://" or
/// "file:///shared/dir". `timeout` bounds the rendezvous and is every collective's default.
/// Throws DistConfigError (bad environment, ranks that disagree) or DistError /
/// DistTimeoutError (a rank or the store unreachable), each naming this rank.
inline std::shared_ptr<ProcessGroup> init_process_group(std::string_view backend = "gloo",
                                                        std::string_view init_method = "env://",
                                                        Milliseconds timeout = kDefaultTimeout) {
  TINYNET_CHECK(DistConfigError, backend == "gloo" || backend == "nccl", "init_process_group: unknown backend '",
                backend, "' (expected gloo or nccl)");
  const bool use_env = init_method == "env://";
  const bool use_file = init_method.starts_with("file://");
  TINYNET_CHECK(DistConfigError, use_env || use_file, "init_process_group: unsupported init_method '", init_method,
                "' (expected env:// or file:///path/to/shared/dir)");
  const LaunchEnv env = read_launch_env(use_env);
  const std::string me = "rank " + std::to_string(env.rank);

  std::shared_ptr<TCPStoreServer> server;
  std::shared_ptr<Store> base;
  // A leading "/" as torch's TCPStore client puts before every key, so a torch client
  // (a debugger, say) sees tinynet's keys under the same names.
  std::string prefix = "/tinynet";
  if (use_file) {
    base = std::make_shared<FileStore>(std::string(init_method.substr(7)), timeout);
  } else if (env.use_agent_store) {
    auto agent_store = std::make_shared<TCPStore>(env.master_addr, env.master_port, timeout, me);
    // Says which launcher protocol was found: the first thing to know when a launcher
    // upgrade breaks the job.
    std::fprintf(stderr, "%s: joined the launcher's store at %s:%d (%s)\n", me.c_str(), env.master_addr.c_str(),
                 env.master_port, detail::protocol_name(agent_store->protocol()));
    base = agent_store;
    prefix = "/worker/attempt_" + std::to_string(env.restart_count) + "/tinynet";
  } else {
    std::string connect_to = env.master_addr;
    if (env.rank == 0) {
      const std::string tag = "[rank 0] ";
      server = std::make_shared<TCPStoreServer>(TCPStoreServerOptions{
          .port = env.master_port,
          .bind_timeout = std::min<Milliseconds>(timeout, std::chrono::seconds(30)),
          .log = [tag](const std::string& m) { std::fprintf(stderr, "%s%s\n", tag.c_str(), m.c_str()); },
          .on_port_in_use = [port = env.master_port, prefix] { detail::refuse_second_rank0(port, prefix); }});
      connect_to = "127.0.0.1";  // it listens on every interface; MASTER_ADDR may name another host's view of it
    }
    base = std::make_shared<TCPStore>(connect_to, env.master_port, timeout, me);
  }
  auto store = std::make_shared<PrefixStore>(prefix, base);
  detail::rendezvous(*store, env.rank, env.world_size, timeout);

  std::shared_ptr<ProcessGroup> group;
  if (backend == "gloo") {
    GlooOptions opts{.timeout = timeout};
    if (const auto iface = detail::env_var("GLOO_SOCKET_IFNAME"); iface && !iface->empty())
      opts.interface = *iface;
    else if (use_env)
      opts.hostname = detail::local_address_toward(env.master_addr);
    group = std::make_shared<GlooGroup>(store, env.rank, env.world_size, opts);
  } else {
#ifdef TINYNET_WITH_NCCL
    group = std::make_shared<NcclGroup>(store, env.rank, env.world_size, env.local_rank, timeout);
#else
    throw DistConfigError(me +
                          ": backend nccl needs a build with NCCL (TINYNET_WITH_NCCL: the CUDA toolkit and "
                          "NCCL found at configure time); use gloo on this build");
#endif
  }
  group->keep_alive(server);
  return group;
}

}  // namespace tinynet::dist
