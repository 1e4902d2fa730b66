#pragma once
/// \file
/// Reduction device kernels over the middle axis of an [outer, n, inner] view: one device
/// thread per output element, running the rules of backend/reduce.hpp.

#include "tinynet/core/config.hpp"

#if defined(TINYNET_WITH_CUDA)

#include <cstdint>

#include "tinynet/backend/backend.hpp"
#include "tinynet/backend/cuda/detail/launch.hpp"
#include "tinynet/backend/reduce.hpp"

namespace tinynet::backend::cuda {

namespace detail {

template <typename T>
struct BroadcastDim {
  const T* gy;
  T* dx;
  std::int64_t n, inner;
  T scale;
  bool accumulate;
  TINYNET_HOST_DEVICE void operator()(std::int64_t e) const {
    const T v = scale * gy[(e / (n * inner)) * inner + e % inner];
    dx[e] = accumulate ? dx[e] + v : v;
  }
};

}  // namespace detail

/// y[o,i] = scale * sum_k x[o,k,i]; U is T, or int64 for int32, int64 and bool x (counts).
template <typename T, typename U>
void sum_dim(Tag, const T* x, U* y, std::int64_t outer, std::int64_t n, std::int64_t inner, U scale) {
  for_each_index(outer * inner, SumDimRow<T, U>{x, y, n, inner, scale});
}

/// dx[o,k,i] (+)= scale * gy[o,i]
template <typename T>
void broadcast_dim(Tag, const T* gy, T* dx, std::int64_t outer, std::int64_t n, std::int64_t inner, T scale,
                   bool accumulate) {
  for_each_index(outer * n * inner, detail::BroadcastDim<T>{gy, dx, n, inner, scale, accumulate});
}

/// y[o,i] = max_k x[o,k,i] (min for Extremum::min; NaN if any is)
template <typename T>
void extremum_dim(Tag, const T* x, T* y, std::int64_t outer, std::int64_t n, std::int64_t inner, Extremum e) {
  for_each_index(outer * inner, ExtremumRow<T>{x, y, nullptr, n, inner, e});
}

/// index[o,i] = the first k at which x[o,k,i] is the extremum
template <typename T>
void arg_extremum_dim(Tag, const T* x, std::int64_t* index, std::int64_t outer, std::int64_t n, std::int64_t inner,
                      Extremum e) {
  for_each_index(outer * inner, ExtremumRow<T>{x, nullptr, index, n, inner, e});
}

/// dx[o,k,i] (+)= gy[o,i] / ties where x[o,k,i] == y[o,i], else 0
template <typename T>
void extremum_dim_backward(Tag, const T* x, const T* y, const T* gy, T* dx, std::int64_t outer, std::int64_t n,
                           std::int64_t inner, bool accumulate) {
  for_each_index(outer * inner, ExtremumBackwardRow<T>{x, y, gy, dx, n, inner, accumulate});
}

}  // namespace tinynet::backend::cuda

#endif  // TINYNET_WITH_CUDA
