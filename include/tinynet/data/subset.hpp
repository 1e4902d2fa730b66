#pragma once
/// \file
/// Subset and random_split, as PyTorch's torch.utils.data: a view of some of a data set's
/// samples, and a data set cut at random into non-overlapping subsets (a validation split).

#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "tinynet/core/error.hpp"
#include "tinynet/data/dataset.hpp"
#include "tinynet/data/sampler.hpp"

namespace tinynet::data {

/// The samples of `dataset` at `indices`, in that order (copies of the data set share its tensors).
template <Dataset D>
class Subset {
 public:
  Subset(D dataset, std::vector<std::int64_t> indices) : dataset_(std::move(dataset)), indices_(std::move(indices)) {
    const std::int64_t n = dataset_.size();
    for (std::int64_t i : indices_)
      TINYNET_CHECK(IndexError, i >= 0 && i < n, "Subset: index ", i, " out of range for a data set of ", n,
                    " samples");
  }

  std::int64_t size() const { return static_cast<std::int64_t>(indices_.size()); }
  Batch get_batch(std::span<const std::int64_t> idx) const {
    std::vector<std::int64_t> mapped(idx.size());
    for (std::size_t k = 0; k < idx.size(); ++k) {
      TINYNET_CHECK(IndexError, idx[k] >= 0 && idx[k] < size(), "get_batch: index ", idx[k],
                    " out of range for a Subset of ", size(), " samples");
      mapped[k] = indices_[static_cast<std::size_t>(idx[k])];
    }
    return dataset_.get_batch(mapped);
  }
  /// Passes the epoch on to a data set whose samples depend on it (data/augment.hpp).
  void set_epoch(std::int64_t epoch) requires EpochAware<D> { dataset_.set_epoch(epoch); }

  const D& dataset() const { return dataset_; }
  const std::vector<std::int64_t>& indices() const { return indices_; }

 private:
  D dataset_;
  std::vector<std::int64_t> indices_;
};

/// `dataset` cut into non-overlapping subsets of the given sizes, from one random
/// permutation of its indices drawn from `seed`. As PyTorch's random_split, `lengths` are
/// either sample counts summing to dataset.size(), or fractions summing to 1 (each
/// floor(fraction * size), the samples left over given one each to the first subsets).
template <Dataset D>
std::vector<Subset<D>> random_split(const D& dataset, const std::vector<double>& lengths, std::uint64_t seed = 0) {
  const std::int64_t n = dataset.size();
  TINYNET_CHECK(ValueError, !lengths.empty(), "random_split: expected at least one length");
  double total = 0;
  bool fractions = true;
  for (double l : lengths) {
    TINYNET_CHECK(ValueError, std::isfinite(l) && l >= 0, "random_split: lengths must be >= 0, got ", l);
    total += l;
    fractions = fractions && l <= 1;
  }
  fractions = fractions && std::abs(total - 1) < 1e-9;
  std::vector<std::int64_t> counts;
  if (fractions) {
    std::int64_t given = 0;
    for (double f : lengths) given += counts.emplace_back(static_cast<std::int64_t>(std::floor(f * n)));
    for (std::size_t i = 0; given < n; i = (i + 1) % counts.size(), ++given) ++counts[i];
  } else {
    std::int64_t sum = 0;
    for (double l : lengths) {
      TINYNET_CHECK(ValueError, l == std::floor(l),
                    "random_split: lengths must be whole sample counts or fractions "
                    "summing to 1, got ",
                    l);
      sum += counts.emplace_back(static_cast<std::int64_t>(l));
    }
    TINYNET_CHECK(ValueError, sum == n, "random_split: the lengths sum to ", sum, " but the data set has ", n,
                  " samples");
  }
  const std::vector<std::int64_t> order = RandomSampler::permutation(n, seed, 0);
  std::vector<Subset<D>> parts;
  std::int64_t at = 0;
  for (std::int64_t c : counts) {
    parts.emplace_back(dataset, std::vector<std::int64_t>(order.begin() + at, order.begin() + at + c));
    at += c;
  }
  return parts;
}

}  // namespace tinynet::data
