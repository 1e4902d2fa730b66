#pragma once
/// \file
/// Optimizer updates on the device: the rules of backend/optimizers.hpp, one fused kernel
/// per parameter tensor.

#include "tinynet/core/config.hpp"

#if defined(TINYNET_WITH_CUDA)

#include <cstdint>

#include "tinynet/backend/backend.hpp"
#include "tinynet/backend/cuda/detail/launch.hpp"
#include "tinynet/backend/optimizers.hpp"

namespace tinynet::backend::cuda {

template <typename T>
void sgd_update(Tag, T* param, const T* grad, T* buf, std::int64_t n, const SgdArgs& a) {
  for_each_index(n, SgdRule<T>(param, grad, buf, a));
}

template <typename T>
void adadelta_update(Tag, T* param, const T* grad, T* square_avg, T* acc_delta, std::int64_t n, const AdadeltaArgs& a) {
  for_each_index(n, AdadeltaRule<T>(param, grad, square_avg, acc_delta, a));
}

template <typename T>
void adam_update(Tag, T* param, const T* grad, T* exp_avg, T* exp_avg_sq, T* max_exp_avg_sq, std::int64_t n,
                 const AdamArgs& a) {
  for_each_index(n, AdamRule<T>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, a));
}

}  // namespace tinynet::backend::cuda

#endif  // TINYNET_WITH_CUDA
