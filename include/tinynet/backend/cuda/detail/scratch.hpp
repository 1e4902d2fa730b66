#pragma once
/// \file
/// Device scratch for the length of one kernel function, from the device's caching allocator.
/// Freed at the end of the function while its kernels may still run: every kernel is on the
/// one stream, so whatever is next given the block runs after them.

#include "tinynet/core/config.hpp"

#if defined(TINYNET_WITH_CUDA)

#include <cstddef>
#include <cstdint>

#include "tinynet/core/cuda/allocator.hpp"
#include "tinynet/core/cuda/runtime.hpp"

namespace tinynet::backend::cuda::detail {

template <typename T>
class DeviceScratch {
 public:
  explicit DeviceScratch(std::int64_t n)
      : allocator_(cuda_allocator(tinynet::cuda::current_device())),
        bytes_(static_cast<std::size_t>(n) * sizeof(T)),
        data_(static_cast<T*>(allocator_.allocate(bytes_))) {}
  ~DeviceScratch() { allocator_.deallocate(data_, bytes_); }
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  T* data() const { return data_; }

 private:
  Allocator& allocator_;  // the one it came from, whatever device is current at the end
  std::size_t bytes_;
  T* data_;
};

}  // namespace tinynet::backend::cuda::detail

#endif  // TINYNET_WITH_CUDA
