#pragma once
/// \file
/// conv2d kernels (NCHW): im2col + GEMM per sample (or per group of samples side by side
/// when outputs are small), samples split into a fixed number of chunks run in parallel.
/// Stride-1 3x3 convolutions with enough channels take Winograd F(2x2, 3x3) instead for
/// the output and the input gradient, and the output of one-channel layers comes from a
/// direct kernel (float32 at the AVX2 and AVX-512 levels; simd/winograd.inl,
/// simd/conv2d_one_channel.inl).
/// Weight and bias gradients are summed per chunk and then across chunks in a fixed
/// order, so results do not depend on thread scheduling. Grouped and dilated convolutions
/// take the direct kernels of conv2d_general.hpp.

#include <cstdint>
#include <type_traits>

#include "tinynet/backend/backend.hpp"
#include "tinynet/backend/bf16_activations.hpp"
#include "tinynet/backend/conv2d.hpp"
#include "tinynet/backend/cpu/conv2d_general.hpp"
#include "tinynet/backend/cpu/detail/conv2d_plan.hpp"
#include "tinynet/backend/cpu/kernels_for_isa.hpp"
#include "tinynet/core/bfloat16.hpp"

namespace tinynet::backend::cpu {

/// All of conv2d_forward's scratch: the chunks', the transformed filters, and with
/// bfloat16 products the filters as a bfloat16 operand.
inline std::int64_t conv2d_forward_scratch(Tag, const Conv2dGeometry& g, Products products) {
  if (!g.plain()) return 0;
  return conv_chunks(g.n) * conv2d_forward_scratch_per_chunk(g) + conv2d_forward_filters(g) +
         (products == Products::bfloat16 ? conv2d_forward_bf16_weights(g) : 0);
}

/// All of conv2d_backward's scratch: the chunks', the transformed filters, and with
/// bfloat16 products the filters and each chunk's output gradient as bfloat16 operands. A
/// fused ReLU needs no more: each chunk masks the output gradient in its own copy of it.
inline std::int64_t conv2d_backward_scratch(Tag, const Conv2dGeometry& g, bool /*relu*/, Products products) {
  if (!g.plain()) return 0;
  return conv_chunks(g.n) * conv2d_backward_scratch_per_chunk(g) + conv2d_backward_filters(g) +
         (products == Products::bfloat16
              ? conv2d_backward_bf16_weights(g) + conv_chunks(g.n) * conv2d_backward_bf16_per_chunk(g)
              : 0);
}

/// Whether the kernels for T take the Winograd path for g at the level in use.
template <typename T>
bool uses_winograd(const Conv2dGeometry& g) {
  return g.plain() && on_isa([&](auto level) { return uses_winograd<T>(level, g); });
}

/// Whether the kernels for T take the direct one-channel path for g's output at the level
/// in use.
template <typename T>
bool uses_one_channel(const Conv2dGeometry& g) {
  return g.plain() && on_isa([&](auto level) { return uses_one_channel<T>(level, g); });
}

/// y[n] = W col(x[n]) + b, then max(y, 0) with `relu` (conv2d_relu: the ReLU costs no pass
/// of its own). `scratch`: conv2d_forward_scratch(g, products) elements.
template <typename T>
void conv2d_forward(Tag, const Conv2dGeometry& g, const T* x, const T* w, const T* b, T* y, T* scratch, bool relu,
                    Products products) {
  if (!g.plain()) return conv2d_general_forward(g, x, w, b, y, relu, products);
  on_isa([&](auto level) { conv2d_forward(level, g, x, w, b, y, scratch, relu, products); });
}

/// Whether conv2d under autocast takes and returns bfloat16 activations in the kernels
/// here for the op's geometry (backend/bf16_activations.hpp): its output (and output
/// gradient), and with `input` its input (and input gradient) too, read and written as
/// they are (simd/conv2d.inl). Elsewhere, grouped and dilated convolutions included, conv2d casts.
inline bool supports_bf16(Tag, const Conv2dBf16& op) {
  if (!op.geometry.plain()) return false;
  return on_isa([&](auto level) { return conv2d_takes_bf16<float>(level, op.geometry, op.input); });
}

/// Calls f(level) at the level in use where its conv2d kernels take bfloat16 activations
/// with an input of type X (supports_bf16 said so before any of them is called).
template <typename X, typename F>
void on_conv2d_bf16_level(F&& f) {
  if constexpr (std::is_same_v<X, bfloat16>)
    on_isa_having([](auto level) { return decltype(level)::conv2d_bf16_input; }, "conv2d: a bfloat16 input",
                  std::forward<F>(f));
  else
    on_isa_having([](auto level) { return decltype(level)::conv2d_bf16; }, "conv2d: bfloat16 activations",
                  std::forward<F>(f));
}

/// bfloat16 activations come with autocast's bfloat16 products only: the kernels have no
/// float32-product path for them.
inline void check_bf16_products(Products products) {
  if (products != Products::bfloat16)
    throw Error("conv2d: bfloat16 activations take bfloat16 products (Products::bfloat16, as autocast passes)");
}

/// conv2d_forward with bfloat16 activations (X, Y: float or bfloat16; where
/// supports_bf16 said so): the output rounded as it is stored.
template <typename X, typename Y>
requires(std::is_same_v<X, bfloat16> ||
         std::is_same_v<Y, bfloat16>) void conv2d_forward(Tag, const Conv2dGeometry& g, const X* x, const float* w,
                                                          const float* b, Y* y, float* scratch, bool relu,
                                                          Products products) {
  check_bf16_products(products);
  on_conv2d_bf16_level<X>([&](auto level) { conv2d_forward(level, g, x, w, b, y, scratch, relu, products); });
}

/// conv2d_backward with bfloat16 activations (X: x and dx; Y: gy and y_relu).
template <typename X, typename Y>
requires(std::is_same_v<X, bfloat16> ||
         std::is_same_v<Y, bfloat16>) void conv2d_backward(Tag, const Conv2dGeometry& g, const X* x, const float* w,
                                                           const Y* gy, X* dx, bool acc_dx, float* dw, bool acc_dw,
                                                           float* db, bool acc_db, float* scratch, const Y* y_relu,
                                                           Products products) {
  check_bf16_products(products);
  on_conv2d_bf16_level<X>([&](auto level) {
    conv2d_backward(level, g, x, w, gy, dx, acc_dx, dw, acc_dw, db, acc_db, scratch, y_relu, products);
  });
}

/// Gradients of conv2d. Any of dx, dw, db may be null (not needed). `y_relu`: the output
/// of a fused conv2d_relu (the gradient passes where it is > 0), or null for plain
/// conv2d. `scratch`: conv2d_backward_scratch(g, relu, products) elements.
template <typename T>
void conv2d_backward(Tag, const Conv2dGeometry& g, const T* x, const T* w, const T* gy, T* dx, bool acc_dx, T* dw,
                     bool acc_dw, T* db, bool acc_db, T* scratch, const T* y_relu, Products products) {
  if (!g.plain()) {
    if (dx != nullptr) conv2d_general_input_grad(g, w, gy, y_relu, dx, acc_dx, products);
    if (dw != nullptr || db != nullptr) conv2d_general_param_grads(g, x, gy, y_relu, dw, acc_dw, db, acc_db, products);
    return;
  }
  on_isa([&](auto level) {
    conv2d_backward(level, g, x, w, gy, dx, acc_dx, dw, acc_dw, db, acc_db, scratch, y_relu, products);
  });
}

}  // namespace tinynet::backend::cpu
