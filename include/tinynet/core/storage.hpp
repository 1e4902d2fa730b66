#pragma once
/// \file
/// Storage: one allocation on one device, shared by every tensor that views it.

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

/// A block of device memory owned through a caching allocator.
class Storage {
 public:
  Storage(std::size_t nbytes, Device device) : nbytes_(nbytes), device_(device), alloc_(&allocator_for(device)) {
    data_ = alloc_->allocate(nbytes);
  }
  /// Host storage from a given allocator (pinned memory).
  Storage(std::size_t nbytes, Device device, Allocator& alloc) : nbytes_(nbytes), device_(device), alloc_(&alloc) {
    data_ = alloc_->allocate(nbytes);
  }
  ~Storage() { alloc_->deallocate(data_, nbytes_); }
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  std::size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  const Allocator& allocator() const { return *alloc_; }

 private:
  void* data_ = nullptr;
  std::size_t nbytes_;
  Device device_;
  Allocator* alloc_;
};

}  // namespace detail
}  // namespace tinynet
