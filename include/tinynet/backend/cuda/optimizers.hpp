#pragma once
/// \file
/// Optimizer updates on the device: the CPU backend's per-element rules
/// (backend/cpu/optimizers.hpp), one fused kernel per parameter tensor.

#include <cstdint>

#include "tinynet/backend/cpu/optimizers.hpp"
#include "tinynet/backend/cuda/launch.hpp"

namespace tinynet::backend::cuda {

template <typename T>
void sgd_update(T* param, const T* grad, T* buf, std::int64_t n, const cpu::SgdArgs& a) {
  for_each_index(n, cpu::SgdRule<T>(param, grad, buf, a));
}

template <typename T>
void adadelta_update(T* param, const T* grad, T* square_avg, T* acc_delta, std::int64_t n, const cpu::AdadeltaArgs& a) {
  for_each_index(n, cpu::AdadeltaRule<T>(param, grad, square_avg, acc_delta, a));
}

template <typename T>
void adam_update(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, T* max_exp_avg_sq, std::int64_t n,
                 const cpu::AdamArgs& a) {
  for_each_index(n, cpu::AdamRule<T>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, a));
}

}  // namespace tinynet::backend::cuda
