#pragma once
/// \file
/// The caching allocator of CUDA tensors: the CPU one's free lists over device memory.
/// All tinynet work runs on one stream per device, so a block freed by one op and handed
/// to the next is ordered after every kernel that used it: no events needed.

#include "tinynet/core/allocator.hpp"
#include "tinynet/core/cuda/runtime.hpp"

#if defined(TINYNET_WITH_CUDA)

namespace tinynet {

/// The caching allocator of cuda:`device` (the current device; see cuda::set_device).
inline Allocator& cuda_allocator(int device) {
  cuda::check_device(device);
  // Leaked on purpose, like the CPU one: tensors in static storage outlive main.
  static auto* a = new detail::CachingAllocator<cuda::DeviceMemory>();
  return *a;
}

/// The caching allocator of pinned (page-locked) host memory for batch uploads.
inline Allocator& pinned_allocator() {
  static auto* a = new detail::CachingAllocator<cuda::PinnedHostMemory>();
  return *a;
}

}  // namespace tinynet

#endif  // TINYNET_WITH_CUDA
