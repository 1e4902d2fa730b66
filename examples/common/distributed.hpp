#pragma once
// Data-parallel plumbing of a training example: join the job (--backend gloo: when the launcher
// asks for more than one process, WORLD_SIZE > 1; --backend nccl: always, one GPU per rank),
// give each rank its share of the training set, average gradients with
// DistributedDataParallel, and let rank 0 alone print and write.

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <tinynet/data/dataloader.hpp>
#include <tinynet/data/distributed_sampler.hpp>
#include <tinynet/dist/dist.hpp>
#include <tinynet/tinynet.hpp>

#include "flags.hpp"
#include "program.hpp"
#include "stop.hpp"

namespace job {

/// This process's place in the job; a single process is rank 0 of 1 with no group.
struct Distributed {
  std::shared_ptr<tinynet::dist::ProcessGroup> group;
  int rank = 0;
  int world_size = 1;
  /// Where this rank trains: the CPU with Gloo, cuda:LOCAL_RANK with NCCL.
  tinynet::Device device = tinynet::Device::cpu();
  /// Rank 0 prints the log lines and writes the model and checkpoints.
  bool is_main() const { return rank == 0; }
  /// "rank 1 of 2: " in a data-parallel run, "" alone.
  std::string prefix() const {
    return group ? "rank " + std::to_string(rank) + " of " + std::to_string(world_size) + ": " : "";
  }
};

/// Whether this process is, or will be once it joins, rank 0: the one that writes files.
/// A single process is; in a job, RANK=0 is (a malformed RANK is reported when joining).
inline bool will_be_rank0(const JobOptions& o) {
  if (o.backend != "nccl" && tinynet::dist::world_size_from_env() <= 1) return true;
  const char* rank = std::getenv("RANK");
  return rank == nullptr || std::string(rank) == "0";
}

/// --dist-timeout, as the process group takes it.
inline tinynet::dist::Milliseconds dist_timeout(const JobOptions& o) {
  return tinynet::dist::Milliseconds(static_cast<long long>(o.dist_timeout * 1000));
}

/// --backend nccl: joins the job with this rank on GPU LOCAL_RANK. What the build or the
/// machine lacks is a DistConfigError (exit code 2: restarting cannot help), raised before
/// joining so that no peer waits for this rank in a collective.
inline Distributed init_nccl(const JobOptions& o) {
#if defined(TINYNET_WITH_CUDA) && defined(TINYNET_WITH_NCCL)
  TINYNET_CHECK(tinynet::dist::DistConfigError, !o.no_cuda,
                "--backend nccl trains on GPUs and cannot be combined with --no-cuda; use --backend gloo to train "
                "data-parallel on the CPU");
  const int gpus = tinynet::cuda::device_count();
  TINYNET_CHECK(tinynet::dist::DistConfigError, gpus > 0,
                "--backend nccl needs a CUDA GPU for every rank, but no CUDA device is present (no GPU, or no driver: "
                "see nvidia-smi); use --backend gloo to train data-parallel on the CPU");
  const tinynet::dist::LaunchEnv env = tinynet::dist::read_launch_env();
  TINYNET_CHECK(tinynet::dist::DistConfigError, env.local_rank < gpus, "rank ", env.rank,
                ": --backend nccl trains on GPU LOCAL_RANK=", env.local_rank, " but this machine has ", gpus,
                " CUDA device", gpus == 1 ? "" : "s", "; start at most one rank per GPU (torchrun --nproc_per_node ",
                gpus, ")");
  tinynet::cuda::set_device(env.local_rank);
  Distributed d;
  d.group = tinynet::dist::init_process_group("nccl", "env://", dist_timeout(o));
  d.rank = d.group->rank();
  d.world_size = d.group->size();
  d.device = tinynet::Device::cuda(env.local_rank);
  return d;
#elif defined(TINYNET_WITH_CUDA)
  (void)o;
  throw tinynet::dist::DistConfigError(
      std::string("--backend nccl: this ") + program +
      "_cuda was built without NCCL (CMake found no nccl.h and libnccl beside the CUDA toolkit: install NCCL, e.g. "
      "libnccl-dev from NVIDIA's repository, and configure again); use --backend gloo");
#else
  (void)o;
  throw tinynet::dist::DistConfigError(
      std::string("--backend nccl trains on GPUs, which this binary cannot: it was compiled by g++ with the CPU "
                  "backend only. Run ") +
      program + "_cuda, the nvcc build of this example, or use --backend gloo");
#endif
}

/// Joins the job: with NCCL always (WORLD_SIZE 1 included, so one GPU runs the code of
/// many), with Gloo when WORLD_SIZE > 1 (env://: torchrun, Kubeflow, or by hand).
inline Distributed init_distributed(const JobOptions& o) {
  if (o.backend == "nccl") return init_nccl(o);
  if (tinynet::dist::world_size_from_env() <= 1) return {};
  Distributed d;
  d.group = tinynet::dist::init_process_group(o.backend, "env://", dist_timeout(o));
  d.rank = d.group->rank();
  d.world_size = d.group->size();
  return d;
}

/// The training loader: the whole set shuffled alone, this rank's DistributedSampler share
/// in a data-parallel run (same seed on every rank, so the shares partition one permutation).
/// `pin_memory` for a GPU run: batches upload without blocking the host.
template <class Dataset>
tinynet::data::DataLoader<Dataset> make_train_loader(const JobOptions& o, const Distributed& d, Dataset train_set,
                                                     bool pin_memory = false) {
  if (!d.group)
    return tinynet::data::DataLoader(
        std::move(train_set), {.batch_size = o.batch_size, .shuffle = true, .seed = o.seed, .pin_memory = pin_memory});
  auto sampler = std::make_unique<tinynet::data::DistributedSampler>(
      train_set.size(), d.world_size, d.rank, tinynet::data::DistributedSamplerOptions{.seed = o.seed});
  return tinynet::data::DataLoader(std::move(train_set), std::move(sampler),
                                   {.batch_size = o.batch_size, .pin_memory = pin_memory});
}

/// Wraps `model` in DistributedDataParallel in a data-parallel run: it starts every rank from
/// rank 0's parameters and averages the gradients during each backward.
template <class Model>
std::unique_ptr<tinynet::dist::DistributedDataParallel<Model>> make_ddp(Model& model, const Distributed& d) {
  if (!d.group) return nullptr;
  return std::make_unique<tinynet::dist::DistributedDataParallel<Model>>(model, d.group);
}

/// With NCCL, the ranks agree on stopping every this many batches only: reading the
/// all-reduced flags waits for the GPU, which would otherwise run ahead of the host.
inline constexpr std::int64_t kNcclStopInterval = 16;

/// The signal that stops training at this batch boundary, or 0 to go on (stop.hpp). Alone,
/// the one this process received. In a data-parallel job the ranks all-reduce which
/// signals they received, so that all stop at the same boundary when any one was told to
/// (a SIGTERM to one pod stops the job cleanly, with rank 0's checkpoint); SIGTERM wins
/// over SIGINT. A rank gone is an error here as in any collective.
inline int agreed_stop(const Distributed& d, std::int64_t batch) {
  const int own = stop_requested();
  if (!d.group) return own;
  const bool nccl = std::string(d.group->backend()) == "nccl";
  if (nccl && batch % kNcclStopInterval != 0) return 0;
  tinynet::Tensor flags = tinynet::from_vector<std::int64_t>({own == SIGTERM ? 1 : 0, own == SIGINT ? 1 : 0}, {2},
                                                             {tinynet::DType::int64, d.device});
  d.group->allreduce(flags);
  const tinynet::Tensor seen = flags.device().is_cpu() ? flags : flags.to(tinynet::Device::cpu());
  if (seen.data<std::int64_t>()[0] > 0) return SIGTERM;
  if (seen.data<std::int64_t>()[1] > 0) return SIGINT;
  return 0;
}

/// Waits for every rank before exiting: rank 0 hosts the store, and must not take it
/// away while others still finish their last step.
inline void finish_distributed(const Distributed& d) {
  if (d.group) d.group->barrier();
}

}  // namespace job
