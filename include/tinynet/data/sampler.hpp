#pragma once
/// \file
/// Samplers: which data set indices an epoch visits, in which order (torch.utils.data's
/// Sampler, SequentialSampler, RandomSampler).
///
/// A sampler is a pure function of its settings and the epoch set by `set_epoch`, so any
/// process can compute any epoch's order without having run the ones before: that is what
/// resuming from a checkpoint and a DistributedSampler (each rank taking its share of one
/// shared permutation) need.

#include <cstdint>
#include <utility>
#include <vector>

#include "tinynet/core/error.hpp"
#include "tinynet/core/random.hpp"

namespace tinynet::data {

/// Chooses the indices one epoch visits.
class Sampler {
 public:
  virtual ~Sampler() = default;
  /// The indices of the current epoch, in visiting order; `size()` of them.
  virtual std::vector<std::int64_t> indices() const = 0;
  /// How many indices one epoch yields.
  virtual std::int64_t size() const = 0;
  /// Selects the epoch whose order `indices()` gives; samplers whose order does not
  /// depend on the epoch ignore it.
  virtual void set_epoch(std::int64_t epoch) { epoch_ = epoch; }
  /// The epoch last set (0 until set_epoch is called).
  std::int64_t epoch() const { return epoch_; }

 protected:
  std::int64_t epoch_ = 0;
};

/// 0, 1, ..., n-1 every epoch.
class SequentialSampler : public Sampler {
 public:
  /// requires: n >= 0.
  explicit SequentialSampler(std::int64_t n) : n_(n) {
    TINYNET_CHECK(ValueError, n >= 0, "SequentialSampler: size must not be negative, got ", n);
  }
  std::vector<std::int64_t> indices() const override {
    std::vector<std::int64_t> out(static_cast<std::size_t>(n_));
    for (std::int64_t i = 0; i < n_; ++i) out[static_cast<std::size_t>(i)] = i;
    return out;
  }
  std::int64_t size() const override { return n_; }

 private:
  std::int64_t n_;
};

/// A random permutation of 0..n-1 for each epoch, a function of (seed, epoch) only: the
/// same seed gives the same orders on every machine and thread count, and each epoch a
/// different one.
class RandomSampler : public Sampler {
 public:
  /// requires: n >= 0.
  RandomSampler(std::int64_t n, std::uint64_t seed) : n_(n), seed_(seed) {
    TINYNET_CHECK(ValueError, n >= 0, "RandomSampler: size must not be negative, got ", n);
  }
  std::vector<std::int64_t> indices() const override { return permutation(n_, seed_, epoch_); }
  std::int64_t size() const override { return n_; }
  std::uint64_t seed() const { return seed_; }

  /// The permutation of 0..n-1 for (seed, epoch): Fisher-Yates with swap partners drawn
  /// from Philox keyed by the seed, the epoch selecting a counter range of its own.
  static std::vector<std::int64_t> permutation(std::int64_t n, std::uint64_t seed, std::int64_t epoch) {
    std::vector<std::int64_t> out(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = i;
    // The domain constant keeps shuffles apart from dropout masks drawn under the same
    // seed; 2^40 counters per epoch leave room for any data set that fits in memory.
    const RandomStream stream{seed ^ kShuffleDomain, static_cast<std::uint64_t>(epoch) << 40};
    for (std::int64_t i = n - 1; i > 0; --i) {
      const auto j = below(stream, static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(i) + 1);
      std::swap(out[static_cast<std::size_t>(i)], out[static_cast<std::size_t>(j)]);
    }
    return out;
  }

 private:
  static constexpr std::uint64_t kShuffleDomain = 0x5348'5546'464c'4531ull;  // "SHUFFLE1"

  // Uniform in [0, bound): 64 random bits from draw i's counter, scaled by multiply-shift
  // (bias below bound / 2^64, nothing a data set can see).
  static std::uint64_t below(const RandomStream& s, std::uint64_t i, std::uint64_t bound) {
    std::uint32_t r[4];
    tinynet::detail::Philox4x32::generate(s.key, s.base + i, r);
    const std::uint64_t x = (std::uint64_t{r[0]} << 32) | r[1];
    __extension__ typedef unsigned __int128 U128;  // GCC/Clang; __extension__ keeps -Wpedantic quiet
    return static_cast<std::uint64_t>((static_cast<U128>(x) * bound) >> 64);
  }

  std::int64_t n_;
  std::uint64_t seed_;
};

}  // namespace tinynet::data
