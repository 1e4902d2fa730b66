#pragma once
/// \file
/// Storage: one allocation on one device, shared by every tensor that views it.

#include <atomic>
#include <cstddef>
#include <cstring>
#include <memory>

#include "tinynet/core/allocator.hpp"
#include "tinynet/core/config.hpp"
#include "tinynet/core/cuda/allocator.hpp"
#include "tinynet/core/device.hpp"
#include "tinynet/core/error.hpp"

namespace tinynet {

/// The caching allocator for `device`; a clear error when tinynet was built without CUDA.
inline Allocator& allocator_for(Device device) {
  require_compiled(device, "device");
#if defined(TINYNET_WITH_CUDA)
  if (device.is_cuda()) return cuda_allocator(device.index);
#endif
  return cpu_allocator();
}

namespace detail {
inline std::atomic<bool>& fill_uninitialized_flag() {
  static std::atomic<bool> on{false};
  return on;
}
}  // namespace detail

/// With `on`, the memory of every new host tensor (empty(), ops' outputs and scratch) starts
/// with all bits set: NaN in floating tensors, -1 in integer ones, as PyTorch's
/// `torch.utils.deterministic.fill_uninitialized_memory` fills it. Code that reads memory it
/// never wrote then gives NaN instead of whatever the allocator's last user left there,
/// which a test can see. Off by default: it costs a pass over every new tensor.
inline void set_fill_uninitialized_memory(bool on) { detail::fill_uninitialized_flag().store(on); }
inline bool fill_uninitialized_memory() { return detail::fill_uninitialized_flag().load(std::memory_order_relaxed); }

namespace detail {

/// A block of device memory owned through a caching allocator.
class Storage {
 public:
  Storage(std::size_t nbytes, Device device) : nbytes_(nbytes), device_(device), alloc_(&allocator_for(device)) {
    data_ = alloc_->allocate(nbytes);
    fill_if_asked();
  }
  /// Host storage from a given allocator (pinned memory).
  Storage(std::size_t nbytes, Device device, Allocator& alloc) : nbytes_(nbytes), device_(device), alloc_(&alloc) {
    data_ = alloc_->allocate(nbytes);
    fill_if_asked();
  }
  ~Storage() { alloc_->deallocate(data_, nbytes_); }
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  std::size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  const Allocator& allocator() const { return *alloc_; }

 private:
  void fill_if_asked() {
    if (device_.is_cpu() && nbytes_ > 0 && fill_uninitialized_memory()) std::memset(data_, 0xFF, nbytes_);
  }

  void* data_ = nullptr;
  std::size_t nbytes_;
  Device device_;
  Allocator* alloc_;
};

}  // namespace detail
}  // namespace tinynet
