#pragma once
/// \file
/// Optimizer update kernels: one fused loop per parameter tensor running the rules of
/// backend/optimizers.hpp, sixteen floats at a time where AVX-512 is compiled in.

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "tinynet/backend/backend.hpp"
#include "tinynet/backend/cpu/detail/vec16f.hpp"
#include "tinynet/backend/cpu/elementwise.hpp"
#include "tinynet/backend/optimizers.hpp"
#include "tinynet/core/parallel.hpp"

namespace tinynet::backend::cpu {

#if defined(TINYNET_CPU_AVX512)
/// Calls body(i, lanes) for i = 0, 16, 32, ... < n in parallel chunks, `lanes` masking the
/// elements of [i, i + 16) inside the chunk.
template <typename Body>
void for_each_vector(std::int64_t n, const Body& body) {
  parallel_for(n, kElementwiseGrain, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; i += 16) body(i, lanes(hi - i));
  });
}
#endif

/// One SGD step over a parameter tensor; `buf` may be null when momentum is 0.
template <typename T>
void sgd_update(Tag, T* param, const T* grad, T* buf, std::int64_t n, const SgdArgs& a) {
  const SgdRule<T> rule(param, grad, buf, a);
#if defined(TINYNET_CPU_AVX512)
  if constexpr (sizeof(T) == 4) {
    for_each_vector(n, [&](std::int64_t i, __mmask16 m) {
      Vec16f p = Vec16f::load(param + i, m),
             b = buf != nullptr ? Vec16f::load(buf + i, m) : Vec16f{_mm512_setzero_ps()};
      rule.update(p, Vec16f::load(grad + i, m), b);
      p.store(param + i, m);
      if (buf != nullptr) b.store(buf + i, m);
    });
    return;
  }
#endif
  for_each_index(Tag{}, n, rule);
}

/// One Adadelta step over a parameter tensor.
template <typename T>
void adadelta_update(Tag, T* param, const T* grad, T* square_avg, T* acc_delta, std::int64_t n, const AdadeltaArgs& a) {
  const AdadeltaRule<T> rule(param, grad, square_avg, acc_delta, a);
#if defined(TINYNET_CPU_AVX512)
  if constexpr (sizeof(T) == 4) {
    for_each_vector(n, [&](std::int64_t i, __mmask16 m) {
      Vec16f p = Vec16f::load(param + i, m), v = Vec16f::load(square_avg + i, m), u = Vec16f::load(acc_delta + i, m);
      rule.update(p, Vec16f::load(grad + i, m), v, u);
      p.store(param + i, m);
      v.store(square_avg + i, m);
      u.store(acc_delta + i, m);
    });
    return;
  }
#endif
  for_each_index(Tag{}, n, rule);
}

/// One Adam / AdamW step over a parameter tensor.
template <typename T>
void adam_update(Tag, T* param, const T* grad, T* exp_avg, T* exp_avg_sq, T* max_exp_avg_sq, std::int64_t n,
                 const AdamArgs& a) {
  for_each_index(Tag{}, n, AdamRule<T>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, a));
}

}  // namespace tinynet::backend::cpu
