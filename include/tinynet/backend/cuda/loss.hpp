#pragma once
/// \file
/// nll_loss device kernels, mirroring backend/cpu/loss.hpp. The targets are checked on the
/// device: an index out of range raises the device error flag (reported by the next
/// synchronisation) and yields NaN, never a stray read.

#include "tinynet/core/config.hpp"

#if defined(TINYNET_WITH_CUDA)

#include <cmath>
#include <cstdint>

#include "tinynet/backend/backend.hpp"
#include "tinynet/backend/cuda/detail/launch.hpp"
#include "tinynet/backend/loss.hpp"

namespace tinynet::backend::cuda {

namespace detail {

template <typename T>
struct NllForward {  // per sample; bad targets raise the device error flag
  const T* logp;
  const std::int64_t* target;
  T* per_sample;
  std::int64_t classes;
  int* error;
  TINYNET_HOST_DEVICE void operator()(std::int64_t i) const {
    const std::int64_t t = target[i];
    if (t < 0 || t >= classes) {
      tinynet::cuda::raise_device_error(error, tinynet::cuda::detail::kIndexOutOfRange);
      per_sample[i] = static_cast<T>(NAN);
      return;
    }
    per_sample[i] = -logp[i * classes + t];
  }
};

template <typename T>
struct ReduceSamples {  // out[0] = sum_i per_sample[i] / divisor, in double and in order (one thread)
  const T* per_sample;
  T* out;
  std::int64_t batch;
  double divisor;
  TINYNET_HOST_DEVICE void operator()(std::int64_t) const {
    double acc = 0;
    for (std::int64_t i = 0; i < batch; ++i) acc += static_cast<double>(per_sample[i]);
    out[0] = static_cast<T>(acc / divisor);
  }
};

}  // namespace detail

/// per_sample[n] = -logp[n, target[n]]; out[0] = sum / divisor (when out is not null).
template <typename T>
void nll_forward(Tag, const T* logp, const std::int64_t* target, T* per_sample, T* out, double divisor,
                 std::int64_t batch, std::int64_t classes) {
  for_each_index(batch, detail::NllForward<T>{logp, target, per_sample, classes, tinynet::cuda::detail::error_word()});
  if (out != nullptr) for_each_index(1, detail::ReduceSamples<T>{per_sample, out, batch, divisor});
}

/// dlogp[n, target[n]] (+)= -gy[n] (per-sample), or -gy[0] / divisor (reduced).
template <typename T>
void nll_backward(Tag, const std::int64_t* target, const T* gy, bool scalar, T divisor, T* dlogp, std::int64_t batch,
                  std::int64_t classes, bool accumulate) {
  for_each_index(batch * classes, NllBackward<T>{target, gy, scalar, divisor, dlogp, classes, accumulate});
}

}  // namespace tinynet::backend::cuda

#endif  // TINYNET_WITH_CUDA
