#pragma once
/// \file
/// Kernels of linear (y = x W^T + b) and matmul: the products at the vector level in use
/// (simd/linear.inl), matmul through Eigen.

#include <cstdint>

#include "tinynet/backend/backend.hpp"
#include "tinynet/backend/bf16_activations.hpp"
#include "tinynet/backend/cpu/detail/gemm.hpp"
#include "tinynet/backend/cpu/detail/scratch.hpp"
#include "tinynet/backend/cpu/kernels_for_isa.hpp"
#include "tinynet/backend/products.hpp"
#include "tinynet/core/bfloat16.hpp"

namespace tinynet::backend::cpu {

/// y[n,o] = sum_i x[n,i] w[o,i] + b[o]   (b may be null)
template <typename T>
void linear_forward(Tag, const T* x, const T* w, const T* b, T* y, std::int64_t batch, std::int64_t in,
                    std::int64_t out, Products products) {
  on_isa([&](auto level) { linear_forward(level, x, w, b, y, batch, in, out, products); });
}

/// dx (+)= gy W
template <typename T>
void linear_backward_input(Tag, const T* gy, const T* w, T* dx, std::int64_t batch, std::int64_t in, std::int64_t out,
                           bool accumulate, Products products) {
  on_isa([&](auto level) { linear_backward_input(level, gy, w, dx, batch, in, out, accumulate, products); });
}

/// dW (+)= gy^T x
template <typename T>
void linear_backward_weight(Tag, const T* gy, const T* x, T* dw, std::int64_t batch, std::int64_t in, std::int64_t out,
                            bool accumulate, Products products) {
  on_isa([&](auto level) { linear_backward_weight(level, gy, x, dw, batch, in, out, accumulate, products); });
}

/// db (+)= sum_n gy[n,:], summed in db's type (gy: T, or bfloat16 activations' gradient)
template <typename T, typename G>
void linear_backward_bias(Tag, const G* gy, T* db, std::int64_t batch, std::int64_t out, bool accumulate) {
  for (std::int64_t o = 0; o < out; ++o) {
    T acc = accumulate ? db[o] : T(0);
    for (std::int64_t n = 0; n < batch; ++n) acc += static_cast<T>(gy[n * out + o]);
    db[o] = acc;
  }
}

/// Whether linear under autocast takes and returns bfloat16 activations in the kernels here
/// (backend/bf16_activations.hpp): at a level whose kernels take them (Level::linear_bf16:
/// from AVX2 up), with vdpbf16ps for an even number of input features (its products read
/// the input's rows in pairs as they are). Elsewhere linear casts.
inline bool supports_bf16(Tag, const LinearBf16& op) {
  return on_isa([&](auto level) {
    using L = decltype(level);
    return L::linear_bf16 && (op.in_features % 2 == 0 || !L::native_bf16);
  });
}

/// Calls f(level) at the level in use where its linear kernels take bfloat16 activations
/// (supports_bf16 said so before any of them is called).
template <typename F>
void on_linear_bf16_level(F&& f) {
  on_isa_having([](auto level) { return decltype(level)::linear_bf16; }, "linear: bfloat16 activations",
                std::forward<F>(f));
}

// linear's kernels with bfloat16 activations (x, y, gy, dx) and float32 parameters, where
// supports_bf16 said so: the same products and sums as on the float32 copy of x (the
// products are bfloat16's), the outputs rounded once.
inline void linear_forward(Tag, const bfloat16* x, const float* w, const float* b, bfloat16* y, std::int64_t batch,
                           std::int64_t in, std::int64_t out, Products) {
  on_linear_bf16_level([&](auto level) { linear_forward(level, x, w, b, y, batch, in, out); });
}
inline void linear_backward_input(Tag, const bfloat16* gy, const float* w, bfloat16* dx, std::int64_t batch,
                                  std::int64_t in, std::int64_t out, bool accumulate, Products) {
  on_linear_bf16_level([&](auto level) { linear_backward_input(level, gy, w, dx, batch, in, out, accumulate); });
}
inline void linear_backward_weight(Tag, const bfloat16* gy, const bfloat16* x, float* dw, std::int64_t batch,
                                   std::int64_t in, std::int64_t out, bool accumulate, Products) {
  on_linear_bf16_level([&](auto level) { linear_backward_weight(level, gy, x, dw, batch, in, out, accumulate); });
}

/// c[m,n] (+)= op(a) op(b), op(a) [m,k] and op(b) [k,n]; a is stored [k,m] when trans_a,
/// b is stored [n,k] when trans_b (matmul and its two gradients). With bfloat16 products
/// the operands are rounded to bfloat16 into scratch first: the same products, summed in
/// float32 by Eigen's GEMM.
template <typename T>
void matmul(Tag, const T* a, const T* b, T* c, std::int64_t m, std::int64_t k, std::int64_t n, bool trans_a,
            bool trans_b, bool accumulate, Products products) {
  if constexpr (std::is_same_v<T, float>) {
    if (products == Products::bfloat16) {
      ScratchFloats ra(m * k), rb(k * n);
      tinynet::detail::round_to_bf16(a, m * k, ra.data());
      tinynet::detail::round_to_bf16(b, k * n, rb.data());
      return gemm<T>(trans_a, trans_b, m, n, k, T(1), ra.data(), trans_a ? m : k, rb.data(), trans_b ? k : n,
                     accumulate ? T(1) : T(0), c, n);
    }
  }
  gemm<T>(trans_a, trans_b, m, n, k, T(1), a, trans_a ? m : k, b, trans_b ? k : n, accumulate ? T(1) : T(0), c, n);
}

}  // namespace tinynet::backend::cpu
