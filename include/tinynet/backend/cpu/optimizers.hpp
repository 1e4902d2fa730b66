#pragma once
/// \file
/// Optimizer update kernels: one fused loop per parameter tensor running the rules of
/// backend/optimizers.hpp, a vector at a time at the AVX2 and AVX-512 levels (simd/optimizers.inl).

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "tinynet/backend/backend.hpp"
#include "tinynet/backend/cpu/elementwise.hpp"
#include "tinynet/backend/cpu/kernels_for_isa.hpp"
#include "tinynet/backend/optimizers.hpp"
#include "tinynet/core/parallel.hpp"

namespace tinynet::backend::cpu {

/// One SGD step over a parameter tensor; `buf` may be null when momentum is 0.
template <typename T>
void sgd_update(Tag, T* param, const T* grad, T* buf, std::int64_t n, const SgdArgs& a) {
  on_isa([&](auto level) { sgd_update(level, param, grad, buf, n, a); });
}

/// One Adadelta step over a parameter tensor.
template <typename T>
void adadelta_update(Tag, T* param, const T* grad, T* square_avg, T* acc_delta, std::int64_t n, const AdadeltaArgs& a) {
  on_isa([&](auto level) { adadelta_update(level, param, grad, square_avg, acc_delta, n, a); });
}

/// One Adam / AdamW step over a parameter tensor.
template <typename T>
void adam_update(Tag, T* param, const T* grad, T* exp_avg, T* exp_avg_sq, T* max_exp_avg_sq, std::int64_t n,
                 const AdamArgs& a) {
  for_each_index(Tag{}, n, AdamRule<T>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, a));
}

}  // namespace tinynet::backend::cpu
