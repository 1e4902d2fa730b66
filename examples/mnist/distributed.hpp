#pragma once
// Data-parallel plumbing of the example: when the launcher asks for more than one
// process (WORLD_SIZE > 1), join the job, give each rank its share of the training set,
// average gradients with DistributedDataParallel, and let rank 0 alone print and write.

#include <tinynet/data/distributed_sampler.hpp>
#include <tinynet/data/dataloader.hpp>
#include <tinynet/data/mnist.hpp>
#include <tinynet/dist/dist.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include "options.hpp"

namespace mnist {

/// This process's place in the job; a single process is rank 0 of 1 with no group.
struct Distributed {
  std::shared_ptr<tinynet::dist::ProcessGroup> group;
  int rank = 0;
  int world_size = 1;
  /// Rank 0 prints the log lines and writes the model and checkpoints.
  bool is_main() const { return rank == 0; }
  /// "rank 1 of 2: " in a data-parallel run, "" alone.
  std::string prefix() const {
    return group ? "rank " + std::to_string(rank) + " of " + std::to_string(world_size) + ": " : "";
  }
};

/// Joins the job when WORLD_SIZE > 1 (env://: torchrun, Kubeflow, or by hand).
inline Distributed init_distributed(const Options& o) {
  if (tinynet::dist::world_size_from_env() <= 1) return {};
  if (o.backend == "nccl")
    throw tinynet::dist::DistConfigError(
        "--backend nccl (GPU ranks) is not wired into the example yet: its data-parallel ranks train on the "
        "CPU; use --backend gloo");
  Distributed d;
  d.group = tinynet::dist::init_process_group(o.backend, "env://",
                                              std::chrono::milliseconds(static_cast<long long>(o.dist_timeout * 1000)));
  d.rank = d.group->rank();
  d.world_size = d.group->size();
  return d;
}

/// The training loader: the whole set shuffled alone, this rank's DistributedSampler share
/// in a data-parallel run (same seed on every rank, so the shares partition one permutation).
/// `pin_memory` for a GPU run: batches upload without blocking the host.
inline tinynet::data::DataLoader<tinynet::data::MNIST> make_train_loader(const Options& o, const Distributed& d,
                                                                       tinynet::data::MNIST train_set,
                                                                       bool pin_memory = false) {
  if (!d.group)
    return tinynet::data::DataLoader(
        std::move(train_set),
        {.batch_size = o.batch_size, .shuffle = true, .seed = o.seed, .pin_memory = pin_memory});
  auto sampler = std::make_unique<tinynet::data::DistributedSampler>(train_set.size(), d.world_size, d.rank,
                                                                     tinynet::data::DistributedSamplerOptions{.seed = o.seed});
  return tinynet::data::DataLoader(std::move(train_set), std::move(sampler), {.batch_size = o.batch_size});
}

/// Wraps `model` in DistributedDataParallel in a data-parallel run: it starts every rank from
/// rank 0's parameters and averages the gradients during each backward.
template <class Model>
std::unique_ptr<tinynet::dist::DistributedDataParallel<Model>> make_ddp(Model& model, const Distributed& d) {
  if (!d.group) return nullptr;
  return std::make_unique<tinynet::dist::DistributedDataParallel<Model>>(model, d.group);
}

/// Waits for every rank before exiting: rank 0 hosts the store, and must not take it
/// away while others still finish their last step.
inline void finish_distributed(const Distributed& d) {
  if (d.group) d.group->barrier();
}

}  // namespace mnist
