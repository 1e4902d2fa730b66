#pragma once
/// \file
/// softmax / log_softmax kernels over the middle axis of an [outer, n, inner] view.

#include <cmath>
#include <cstdint>

#include "tinynet/backend/backend.hpp"
#include "tinynet/backend/softmax.hpp"
#include "tinynet/core/parallel.hpp"

namespace tinynet::backend::cpu {

template <typename T>
void softmax_forward(Tag, const T* x, T* y, std::int64_t outer, std::int64_t n, std::int64_t inner, bool log) {
  const SoftmaxRowForward<T> row{x, y, n, inner, log};
  parallel_for(outer * inner, std::max<std::int64_t>(1, 4096 / std::max<std::int64_t>(n, 1)),
               [&](std::int64_t lo, std::int64_t hi) {
                 for (std::int64_t j = lo; j < hi; ++j) row(j);
               });
}

template <typename T>
void softmax_backward(Tag, const T* y, const T* gy, T* dx, std::int64_t outer, std::int64_t n, std::int64_t inner,
                      bool log, bool accumulate) {
  const SoftmaxRowBackward<T> row{y, gy, dx, n, inner, log, accumulate};
  parallel_for(outer * inner, std::max<std::int64_t>(1, 4096 / std::max<std::int64_t>(n, 1)),
               [&](std::int64_t lo, std::int64_t hi) {
                 for (std::int64_t j = lo; j < hi; ++j) row(j);
               });
}

}  // namespace tinynet::backend::cpu
