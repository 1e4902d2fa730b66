#pragma once
/// \file
/// DataLoader: batches of a Dataset in the order a Sampler gives, with the next batch
/// gathered in the background (a oneTBB task) while the caller works on the current one.
///
///     DataLoader loader(MNIST(root), {.batch_size = 64, .shuffle = true, .seed = 1});
///     for (int epoch = 1; epoch <= 5; ++epoch)
///       for (auto& batch : loader) step(batch.data, batch.target);  // a new order each pass
///
/// Each pass (each `begin()`) is one epoch: it runs the epoch last given to `set_epoch`,
/// or the one after the previous pass, so plain loops get a new order every epoch and a
/// resumed run (or a DistributedSampler) can say which epoch it is. Prefetching changes
/// only when a batch is gathered, never which: batches are a function of (seed, epoch).
/// Batches are allocated through the caching allocator; with at most two alive at a
/// time, an epoch after the first allocates nothing new from the system.

#include <tbb/task_group.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "tinynet/core/error.hpp"
#include "tinynet/core/parallel.hpp"
#include "tinynet/data/dataset.hpp"
#include "tinynet/data/sampler.hpp"

namespace tinynet::data {

/// Settings of a DataLoader, named like torch.utils.data.DataLoader's arguments.
struct DataLoaderOptions {
  std::int64_t batch_size = 1;  ///< samples per batch (> 0)
  bool shuffle = false;         ///< a RandomSampler(seed) instead of a SequentialSampler
  std::uint64_t seed = 0;       ///< seed of the shuffle (ignored without shuffle)
  bool drop_last = false;       ///< skip the last batch when it would be smaller than batch_size
  bool prefetch = true;         ///< gather the next batch in the background
  /// Put batches in pinned memory, so that copying them to a GPU does not block the host
  /// (needs the CUDA backend; like PyTorch's pin_memory).
  bool pin_memory = false;
};

/// Batches of a Dataset; iterate with `for (auto& batch : loader)`.
template <Dataset D>
class DataLoader {
  struct Impl;

 public:
  /// Batches of `dataset` in sequential order, or shuffled when `opts.shuffle`.
  /// Takes the data set by value: tinynet's data sets are handles whose copies share data.
  explicit DataLoader(D dataset, DataLoaderOptions opts = {}) : DataLoader(std::move(dataset), nullptr, opts) {}

  /// Batches of `dataset` in the order `sampler` gives (then `opts.shuffle` must be false).
  DataLoader(D dataset, std::unique_ptr<Sampler> sampler, DataLoaderOptions opts = {})
      : impl_(std::make_unique<Impl>(std::move(dataset), opts)) {
    TINYNET_CHECK(ValueError, opts.batch_size > 0, "DataLoader: batch_size must be positive, got ", opts.batch_size);
    TINYNET_CHECK(ValueError, !opts.pin_memory || cuda::is_available(),
                  "DataLoader: pin_memory needs a CUDA device and a build with the CUDA backend (nvcc)");
    TINYNET_CHECK(ValueError, !(sampler && opts.shuffle),
                  "DataLoader: give either a sampler or shuffle = true, not both (the sampler sets the order)");
    if (sampler)
      impl_->sampler = std::move(sampler);
    else if (opts.shuffle)
      impl_->sampler = std::make_unique<RandomSampler>(impl_->dataset.size(), opts.seed);
    else
      impl_->sampler = std::make_unique<SequentialSampler>(impl_->dataset.size());
  }

  /// Batches per epoch: ceil(samples / batch_size), or floor with drop_last.
  std::int64_t size() const { return impl_->num_batches(); }
  /// Sets the epoch the next pass runs (like DistributedSampler.set_epoch); passes after
  /// it count on from there.
  void set_epoch(std::int64_t epoch) { impl_->epoch = epoch; }
  /// The epoch the next pass runs.
  std::int64_t epoch() const { return impl_->epoch; }
  const D& dataset() const { return impl_->dataset; }
  Sampler& sampler() { return *impl_->sampler; }
  const DataLoaderOptions& options() const { return impl_->opts; }

  /// Walks one epoch's batches. Copies share the position (an input iterator); only the
  /// last `begin()` of a loader is valid.
  class Iterator {
   public:
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    Iterator() = default;
    /// The current batch; it stays valid until the next increment.
    Batch& operator*() const { return impl_->current; }
    Batch* operator->() const { return &impl_->current; }
    Iterator& operator++() {
      impl_->advance();
      return *this;
    }
    void operator++(int) { impl_->advance(); }
    friend bool operator==(const Iterator& it, std::default_sentinel_t) {
      return it.impl_ == nullptr || it.impl_->pos >= it.impl_->batches;
    }

   private:
    friend class DataLoader;
    explicit Iterator(Impl* impl) : impl_(impl) {}
    Impl* impl_ = nullptr;
  };

  /// Starts the next epoch (see the file comment) and returns its first batch. Waits for
  /// a batch still being prefetched by an abandoned pass.
  Iterator begin() {
    impl_->start();
    return Iterator(impl_.get());
  }
  std::default_sentinel_t end() const { return {}; }

 private:
  // Everything lives behind one pointer so a prefetch task's references survive a move of
  // the DataLoader.
  struct Impl {
    Impl(D d, DataLoaderOptions o) : dataset(std::move(d)), opts(o) {}
    ~Impl() { settle(); }

    D dataset;
    DataLoaderOptions opts;
    std::unique_ptr<Sampler> sampler;
    std::int64_t epoch = 0;

    // The pass in progress.
    std::vector<std::int64_t> indices;
    std::int64_t batches = 0;
    std::int64_t pos = 0;
    Batch current;
    Batch next;
    bool in_flight = false;
    tbb::task_group group;

    /// The samples at `idx` as a batch, pinned when asked.
    Batch fetch(std::span<const std::int64_t> idx) {
      Batch b = dataset.get_batch(idx);
      if (opts.pin_memory) {
        b.data = b.data.pin_memory();
        b.target = b.target.pin_memory();
      }
      return b;
    }

    std::int64_t num_batches() const {
      // Not (n + b - 1) / b: that overflows for a batch size near INT64_MAX.
      const std::int64_t n = sampler->size(), b = opts.batch_size;
      return n / b + (!opts.drop_last && n % b != 0 ? 1 : 0);
    }

    std::span<const std::int64_t> batch_indices(std::int64_t k) const {
      const auto first = static_cast<std::size_t>(k * opts.batch_size);  // k < batches: at most n - 1
      const auto count = std::min(static_cast<std::size_t>(opts.batch_size), indices.size() - first);
      return std::span<const std::int64_t>(indices).subspan(first, count);
    }

    void launch(std::int64_t k) {
      tinynet::detail::ensure_thread_setting();  // the task runs under tinynet's thread cap
      in_flight = true;
      group.run([this, k] { next = fetch(batch_indices(k)); });
    }

    // Waits for an in-flight prefetch whose batch nobody will use; its error too is moot.
    void settle() {
      if (!in_flight) return;
      in_flight = false;
      try {
        group.wait();
      } catch (...) {
      }
      next = {};
    }

    void start() {
      settle();
      current = {};
      if constexpr (EpochAware<D>) dataset.set_epoch(epoch);  // per-sample randomness (data/augment.hpp)
      sampler->set_epoch(epoch++);
      indices = sampler->indices();
      batches = num_batches();
      TINYNET_CHECK(ValueError, static_cast<std::int64_t>(indices.size()) == sampler->size(),
                    "DataLoader: the sampler gave ", indices.size(), " indices but says its size is ", sampler->size());
      pos = 0;
      if (batches == 0) return;
      current = fetch(batch_indices(0));
      if (opts.prefetch && batches > 1) launch(1);
    }

    void advance() {
      ++pos;
      if (pos >= batches) {
        current = {};  // the epoch is over: hand its blocks back to the allocator
        return;
      }
      if (in_flight) {
        in_flight = false;
        group.wait();  // rethrows an error of get_batch here, in the caller's thread
        current = std::move(next);
        next = {};
      } else {
        current = fetch(batch_indices(pos));
      }
      if (opts.prefetch && pos + 1 < batches) launch(pos + 1);
    }
  };

  std::unique_ptr<Impl> impl_;
};

}  // namespace tinynet::data
