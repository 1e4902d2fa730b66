#pragma once
/// \file
/// Counter-based random numbers (Philox4x32-10). Element i of a random op draws from
/// counter (op's base + i / 4), so results depend only on the seed and the element
/// index: the same on every thread count, and on the GPU, whose kernels call the same
/// functions.

#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <numbers>

#include "tinynet/core/config.hpp"

namespace tinynet {

namespace detail {

struct Philox4x32 {
  /// Ten rounds of Philox4x32 on `counter` (128 bits) under `key` (64 bits).
  TINYNET_HOST_DEVICE static void generate(std::uint64_t key, std::uint64_t counter, std::uint32_t out[4]) {
    std::uint32_t c0 = static_cast<std::uint32_t>(counter), c1 = static_cast<std::uint32_t>(counter >> 32);
    std::uint32_t c2 = 0, c3 = 0;
    std::uint32_t k0 = static_cast<std::uint32_t>(key), k1 = static_cast<std::uint32_t>(key >> 32);
    for (int round = 0; round < 10; ++round) {
      const std::uint64_t p0 = std::uint64_t{0xD2511F53u} * c0;
      const std::uint64_t p1 = std::uint64_t{0xCD9E8D57u} * c2;
      const std::uint32_t n0 = static_cast<std::uint32_t>(p1 >> 32) ^ c1 ^ k0;
      const std::uint32_t n2 = static_cast<std::uint32_t>(p0 >> 32) ^ c3 ^ k1;
      c1 = static_cast<std::uint32_t>(p1);
      c3 = static_cast<std::uint32_t>(p0);
      c0 = n0;
      c2 = n2;
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
  }
};

/// Uniform in [0, 1) with 24 random bits (float) or 32 (double).
template <typename T>
TINYNET_HOST_DEVICE inline T uint_to_unit(std::uint32_t x) {
  if constexpr (sizeof(T) == 4)
    return static_cast<T>(x >> 8) * static_cast<T>(1.0 / 16777216.0);
  else
    return static_cast<T>(x) * static_cast<T>(1.0 / 4294967296.0);
}

}  // namespace detail

/// A stream of random draws: one op reserves a block of counters, then element i
/// reads `uniform(i)` / `normal(i)` independently of every other element.
struct RandomStream {
  std::uint64_t key = 0;
  std::uint64_t base = 0;

  /// Uniform in [0, 1) for element i.
  template <typename T>
  TINYNET_HOST_DEVICE T uniform(std::uint64_t i) const {
    std::uint32_t r[4];
    detail::Philox4x32::generate(key, base + i / 4, r);
    return detail::uint_to_unit<T>(r[i % 4]);
  }

  /// Standard normal for element i (Box-Muller; elements 2k and 2k+1 share a pair).
  template <typename T>
  TINYNET_HOST_DEVICE T normal(std::uint64_t i) const {
    std::uint32_t r[4];
    detail::Philox4x32::generate(key, base + i / 2, r);
    const T u1 = T(1) - detail::uint_to_unit<T>(r[0]);  // (0, 1]: log is finite
    const T u2 = detail::uint_to_unit<T>(r[1]);
    const T radius = std::sqrt(T(-2) * std::log(u1));
    const T angle = T(2) * std::numbers::pi_v<T> * u2;
    return radius * (i % 2 == 0 ? std::cos(angle) : std::sin(angle));
  }
};

/// A seeded generator. Each random op advances its offset by the counters it used, so
/// a run is reproducible from (seed, offset), which checkpoints save.
class Generator {
 public:
  explicit Generator(std::uint64_t seed = 0) : seed_(seed) {}

  void manual_seed(std::uint64_t seed) {
    seed_ = seed;
    offset_.store(0);
  }
  std::uint64_t seed() const { return seed_; }
  std::uint64_t offset() const { return offset_.load(); }
  void set_state(std::uint64_t seed, std::uint64_t offset) {
    seed_ = seed;
    offset_.store(offset);
  }

  /// Reserves counters for `n` draws (uniform or normal) and returns their stream.
  RandomStream reserve(std::uint64_t n) {
    const std::uint64_t blocks = (n + 1) / 2 + 1;  // normal() uses one counter per 2 elements
    return RandomStream{seed_, offset_.fetch_add(blocks)};
  }

 private:
  std::uint64_t seed_;
  std::atomic<std::uint64_t> offset_{0};
};

/// The process-wide generator that random creation functions and dropout use by default.
inline Generator& default_generator() {
  static Generator g(0);
  return g;
}

/// Seeds the default generator (like torch.manual_seed).
inline void manual_seed(std::uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace tinynet
