#pragma once
/// \file
/// CPU caching allocator. Freed blocks are kept in per-size free lists and handed back
/// on the next request of the same size, so a training step whose tensor sizes repeat
/// allocates nothing from the system after the first step. The counters let tests
/// prove it.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace tinynet {

/// Counters of a caching allocator.
struct AllocatorStats {
  std::uint64_t system_allocs = 0;  ///< blocks obtained from the system, ever
  std::uint64_t system_bytes = 0;   ///< bytes obtained from the system, ever
  std::uint64_t requests = 0;       ///< allocate() calls, ever
  std::uint64_t cache_hits = 0;     ///< requests served from the cache
  std::uint64_t bytes_in_use = 0;   ///< bytes handed out and not yet returned
  std::uint64_t bytes_cached = 0;   ///< bytes held in free lists
};

/// Interface every device allocator implements.
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(std::size_t nbytes) = 0;
  virtual void deallocate(void* p, std::size_t nbytes) = 0;
  virtual AllocatorStats stats() const = 0;
  /// Returns every cached block to the system.
  virtual void empty_cache() = 0;
};

namespace detail {

/// Host memory, 64-byte aligned: where CPU tensors live.
struct HostMemory {
  static void* allocate(std::size_t nbytes) { return std::aligned_alloc(64, nbytes); }
  static void release(void* p) { std::free(p); }
};

/// Caching allocator over blocks from `Memory` (allocate returns null when out of
/// memory; release frees). Thread-safe.
template <typename Memory>
class CachingAllocator final : public Allocator {
 public:
  static constexpr std::size_t kAlignment = 64;

  ~CachingAllocator() override { empty_cache(); }

  void* allocate(std::size_t nbytes) override {
    const std::size_t size = round_up(nbytes);
    std::lock_guard lock(mu_);
    ++stats_.requests;
    stats_.bytes_in_use += size;
    if (auto it = free_.find(size); it != free_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      ++stats_.cache_hits;
      stats_.bytes_cached -= size;
      return p;
    }
    void* p = Memory::allocate(size);
    if (p == nullptr) {
      // Out of memory: give the cached blocks back and try once more.
      release_cached();
      p = Memory::allocate(size);
    }
    if (p == nullptr) {
      stats_.bytes_in_use -= size;
      throw std::bad_alloc();
    }
    ++stats_.system_allocs;
    stats_.system_bytes += size;
    return p;
  }

  void deallocate(void* p, std::size_t nbytes) override {
    if (p == nullptr) return;
    const std::size_t size = round_up(nbytes);
    std::lock_guard lock(mu_);
    stats_.bytes_in_use -= size;
    stats_.bytes_cached += size;
    free_[size].push_back(p);
  }

  AllocatorStats stats() const override {
    std::lock_guard lock(mu_);
    return stats_;
  }

  void empty_cache() override {
    std::lock_guard lock(mu_);
    release_cached();
  }

 private:
  void release_cached() {
    for (auto& [size, blocks] : free_)
      for (void* p : blocks) Memory::release(p);
    free_.clear();
    stats_.bytes_cached = 0;
  }

  // Sizes are rounded so that near-identical requests share a free list:
  // to 64 bytes below 64 KiB, to 4 KiB above.
  static std::size_t round_up(std::size_t n) {
    const std::size_t q = n < (std::size_t{1} << 16) ? kAlignment : 4096;
    return n == 0 ? kAlignment : (n + q - 1) / q * q;
  }

  mutable std::mutex mu_;
  std::unordered_map<std::size_t, std::vector<void*>> free_;
  AllocatorStats stats_;
};

}  // namespace detail

/// The process-wide CPU allocator every CPU tensor draws from.
inline Allocator& cpu_allocator() {
  // Leaked on purpose: tensors in static storage may be freed after main returns.
  static auto* a = new detail::CachingAllocator<detail::HostMemory>();
  return *a;
}

}  // namespace tinynet
