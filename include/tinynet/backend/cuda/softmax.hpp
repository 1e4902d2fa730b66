#pragma once
/// \file
/// softmax / log_softmax device kernels: one row (backend/softmax.hpp) per index.

#include "tinynet/core/config.hpp"

#if defined(TINYNET_WITH_CUDA)

#include <cmath>
#include <cstdint>

#include "tinynet/backend/backend.hpp"
#include "tinynet/backend/cuda/detail/launch.hpp"
#include "tinynet/backend/softmax.hpp"

namespace tinynet::backend::cuda {

template <typename T>
void softmax_forward(Tag, const T* x, T* y, std::int64_t outer, std::int64_t n, std::int64_t inner, bool log) {
  for_each_index(outer * inner, SoftmaxRowForward<T>{x, y, n, inner, log});
}

template <typename T>
void softmax_backward(Tag, const T* y, const T* gy, T* dx, std::int64_t outer, std::int64_t n, std::int64_t inner,
                      bool log, bool accumulate) {
  for_each_index(outer * inner, SoftmaxRowBackward<T>{y, gy, dx, n, inner, log, accumulate});
}

}  // namespace tinynet::backend::cuda

#endif  // TINYNET_WITH_CUDA
