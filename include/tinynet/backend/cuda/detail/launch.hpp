#pragma once
/// \file
/// The one way device kernels are launched: f(i) for every i in [0, n), as a Thrust
/// for_each over a counting iterator on tinynet's stream. Under nvcc that is a CUDA
/// kernel; on the emulated device it is a oneTBB (or OpenMP) loop running the same f.

#include "tinynet/core/config.hpp"

#if defined(TINYNET_WITH_CUDA)

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <cstdint>

#include "tinynet/core/cuda/runtime.hpp"

namespace tinynet::backend::cuda {

/// Runs `f(i)` for i in [0, n) on the device, asynchronously; `f` must be
/// TINYNET_HOST_DEVICE and capture only values and device pointers.
template <typename F>
void for_each_index(std::int64_t n, F f) {
  if (n <= 0) return;
  thrust::for_each_n(tinynet::cuda::policy(), thrust::counting_iterator<std::int64_t>(0), n, f);
}

/// Shape-like extents and strides that device code can read (std::array is host-only there).
struct Dims {
  static constexpr int kMax = 6;
  int rank = 0;
  std::int64_t extent[kMax] = {};
  std::int64_t stride_a[kMax] = {};
  std::int64_t stride_b[kMax] = {};
};

}  // namespace tinynet::backend::cuda

#endif  // TINYNET_WITH_CUDA
