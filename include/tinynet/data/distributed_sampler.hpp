#pragma once
/// \file
/// DistributedSampler: each rank's share of a data set (torch.utils.data.distributed.
/// DistributedSampler, same semantics). Every rank sees ceil(N / world) indices (or
/// floor with drop_last); without drop_last the order is padded by wrapping around to
/// the start so all ranks take the same number of steps; rank r takes positions r,
/// r + world, r + 2 world, ... of the (shuffled) order. With shuffle, the order is the
/// permutation for (seed, epoch), the same on every rank: call set_epoch (or let the
/// DataLoader do it) so each epoch is shuffled differently.

#include <cstdint>
#include <vector>

#include "tinynet/core/error.hpp"
#include "tinynet/data/sampler.hpp"

namespace tinynet::data {

struct DistributedSamplerOptions {
  bool shuffle = true;
  std::uint64_t seed = 0;
  bool drop_last = false;
};

class DistributedSampler : public Sampler {
 public:
  /// requires: size >= 0, num_replicas >= 1, 0 <= rank < num_replicas.
  DistributedSampler(std::int64_t size, int num_replicas, int rank, DistributedSamplerOptions opts = {})
      : n_(size), replicas_(num_replicas), rank_(rank), opts_(opts) {
    TINYNET_CHECK(ValueError, size >= 0, "DistributedSampler: size must not be negative, got ", size);
    TINYNET_CHECK(ValueError, num_replicas >= 1, "DistributedSampler: num_replicas must be positive, got ",
                  num_replicas);
    TINYNET_CHECK(ValueError, rank >= 0 && rank < num_replicas, "DistributedSampler: rank ", rank, " is not in [0, ",
                  num_replicas, ")");
    // drop_last trims the tail so the data splits evenly; otherwise the tail is padded.
    per_rank_ = opts.drop_last ? n_ / replicas_ : (n_ + replicas_ - 1) / replicas_;
  }

  std::vector<std::int64_t> indices() const override {
    std::vector<std::int64_t> order =
        opts_.shuffle ? RandomSampler::permutation(n_, opts_.seed, epoch_) : SequentialSampler(n_).indices();
    const std::int64_t total = per_rank_ * replicas_;
    // Pad by repeating the order from its start (repeatedly if it is shorter than the padding).
    for (std::int64_t i = 0; static_cast<std::int64_t>(order.size()) < total; ++i)
      order.push_back(order[static_cast<std::size_t>(i)]);
    std::vector<std::int64_t> out;
    out.reserve(static_cast<std::size_t>(per_rank_));
    for (std::int64_t i = rank_; i < total; i += replicas_) out.push_back(order[static_cast<std::size_t>(i)]);
    return out;
  }
  std::int64_t size() const override { return per_rank_; }
  int num_replicas() const { return replicas_; }
  int rank() const { return rank_; }

 private:
  std::int64_t n_;
  int replicas_, rank_;
  DistributedSamplerOptions opts_;
  std::int64_t per_rank_;
};

}  // namespace tinynet::data
