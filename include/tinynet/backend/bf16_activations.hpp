#pragma once
/// \file
/// Which backends take autocast's bfloat16 activations in their product kernels, asked the
/// way ggml asks `supports_op`: a concept over the backend's tag says that it has such
/// kernels at all (their signatures), and one run-time query, `supports_bf16(be, op)`, says
/// whether they serve this op's shape on this machine. An op asks `takes_bf16(device, op)`
/// and, where the answer is no, casts; it never tests which backend it holds. A backend
/// without the kernels (CUDA today) answers no by construction.
///
/// The kernels' types: activations A (x, y, their gradients; bfloat16 here), parameters and
/// their gradients P (float), as in the float32 kernels of backend/kernel_set.hpp, whose
/// signatures they share.

#include <concepts>
#include <cstdint>

#include "tinynet/backend/backend.hpp"
#include "tinynet/backend/batch_norm.hpp"
#include "tinynet/backend/conv2d.hpp"
#include "tinynet/backend/products.hpp"
#include "tinynet/core/bfloat16.hpp"
#include "tinynet/core/error.hpp"

namespace tinynet::backend {

/// linear's query: its input's features (the kernels may need an even count).
struct LinearBf16 {
  std::int64_t in_features;
};

/// conv2d's query: its geometry, and whether the input (and its gradient) would be
/// bfloat16 too; otherwise only the output and its gradient are.
struct Conv2dBf16 {
  Conv2dGeometry geometry;
  bool input;
};

/// batch_norm's query: its geometry. The kernels read a bfloat16 input and write its
/// gradient in bfloat16; the statistics, parameters, output and output gradient are float32
/// (autocast keeps batch_norm in float32).
struct BatchNormBf16 {
  BatchNormGeometry geometry;
};

/// Tag B has linear's kernels over bfloat16 activations and float32 parameters.
template <class B>
concept LinearBf16Kernels = requires(B be, const bfloat16* x, bfloat16* y, const float* p, float* dp, std::int64_t i,
                                     bool on, Products products, const LinearBf16& op) {
  { supports_bf16(be, op) } -> std::same_as<bool>;
  { linear_forward(be, x, p, p, y, i, i, i, products) } -> std::same_as<void>;
  { linear_backward_input(be, x, p, y, i, i, i, on, products) } -> std::same_as<void>;
  { linear_backward_weight(be, x, x, dp, i, i, i, on, products) } -> std::same_as<void>;
  { linear_backward_bias(be, x, dp, i, i, on) } -> std::same_as<void>;
};

/// Tag B has conv2d's kernels with a bfloat16 output (and output gradient) for a float32 or
/// a bfloat16 input, float32 parameters.
template <class B>
concept Conv2dBf16Kernels = requires(B be, const Conv2dGeometry& g, const bfloat16* a, bfloat16* da, const float* f,
                                     float* df, bool on, Products products, const Conv2dBf16& op) {
  { supports_bf16(be, op) } -> std::same_as<bool>;
  { conv2d_forward(be, g, f, f, f, da, df, on, products) } -> std::same_as<void>;
  { conv2d_forward(be, g, a, f, f, da, df, on, products) } -> std::same_as<void>;
  { conv2d_backward(be, g, f, f, a, df, on, df, on, df, on, df, a, products) } -> std::same_as<void>;
  { conv2d_backward(be, g, a, f, a, da, on, df, on, df, on, df, a, products) } -> std::same_as<void>;
};

/// Tag B has batch_norm's kernels for a bfloat16 input and float32 everything else.
template <class B>
concept BatchNormBf16Kernels = requires(B be, const BatchNormGeometry& g, const bfloat16* x, bfloat16* dx,
                                        const float* p, float* q, double* sums, double d, bool on,
                                        const BatchNormBf16& op) {
  { supports_bf16(be, op) } -> std::same_as<bool>;
  { batch_norm_train_stats(be, g, x, q, q, q, q, q, d, d) } -> std::same_as<void>;
  { batch_norm_apply(be, g, x, p, p, p, p, q, on) } -> std::same_as<void>;
  { batch_norm_backward(be, g, x, p, p, p, p, p, on, dx, on, q, on, q, on, sums) } -> std::same_as<void>;
};

/// The kernels an op needs for bfloat16 activations: `Op` is the op's query type.
template <class B, class Op>
concept Bf16KernelsFor = (std::same_as<Op, LinearBf16> && LinearBf16Kernels<B>) ||
                         (std::same_as<Op, Conv2dBf16> && Conv2dBf16Kernels<B>) ||
                         (std::same_as<Op, BatchNormBf16> && BatchNormBf16Kernels<B>);

/// Whether `device`'s backend runs `op` on bfloat16 activations in its kernels: false for
/// a backend without them, else its answer for this shape and machine.
template <class Op>
bool takes_bf16(Device device, const Op& op) {
  return with_backend(device, "autocast", [&](auto be) {
    if constexpr (Bf16KernelsFor<decltype(be), Op>)
      return supports_bf16(be, op);
    else
      return false;
  });
}

/// Calls `f.template operator()<A, P>(tag)` with the types of an op's activations and
/// parameters: A = P = float or double for those dtypes, and for bfloat16 activations A =
/// bfloat16, P = float, on backends with the op's bfloat16 kernels (the only ones an op
/// gives bfloat16 activations: takes_bf16). `Op` names the op's query type.
template <class Op, typename F>
void dispatch_activations(Device device, DType activations, const char* op, F&& f) {
  with_backend(device, op, [&](auto be) {
    if (activations != DType::bfloat16)
      return dispatch_floating(activations, op, [&]<typename T>() { f.template operator()<T, T>(be); });
    if constexpr (Bf16KernelsFor<decltype(be), Op>)
      f.template operator()<bfloat16, float>(be);
    else
      throw Error(::tinynet::detail::concat(op, ": bfloat16 activations on a backend without their kernels"));
  });
}

}  // namespace tinynet::backend
