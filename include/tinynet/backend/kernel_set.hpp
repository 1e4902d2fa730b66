#pragma once
/// \file
/// `KernelSet<B>`: the kernels every backend offers, with their signatures, as a concept over
/// the backend's tag. Ops call these and nothing else of a backend, so a backend whose tag
/// satisfies it (for float and double, and for bfloat16 where ops take it) runs every op;
/// tests pin it for backend::cpu::Tag and backend::cuda::Tag. Check it where the backend's
/// family headers are included: the kernels are found through the tag (backend/backend.hpp).

#include <concepts>
#include <cstdint>

#include "tinynet/backend/batch_norm.hpp"
#include "tinynet/backend/compare.hpp"
#include "tinynet/backend/conv2d.hpp"
#include "tinynet/backend/elementwise.hpp"
#include "tinynet/backend/optimizers.hpp"
#include "tinynet/backend/pool2d.hpp"
#include "tinynet/backend/products.hpp"
#include "tinynet/backend/reduce.hpp"
#include "tinynet/backend/view.hpp"
#include "tinynet/core/random.hpp"
#include "tinynet/core/shape.hpp"

namespace tinynet::backend {

/// The kernels of tag B for scalar type T. Arguments are spelled with their exact types;
/// `i` stands for every extent, `on` for every flag, `x` for an input, `y` for an output.
template <class B, class T>
concept KernelSetFor = requires(B be, const T* x, T* y, std::int64_t i, bool on, double d, T s, const Shape& shape,
                                const Conv2dGeometry& conv, const Pool2dGeometry& pool, const BatchNormGeometry& bn,
                                const AdaptivePool2dGeometry& adaptive, const std::int64_t* target,
                                const std::int32_t* index32, std::int64_t* index, std::int32_t* argmax,
                                const std::int32_t* saved_argmax, double* sums, const RandomStream& rs,
                                const UnaryForward<Relu, T>& rule, const SgdArgs& sgd, const AdadeltaArgs& adadelta,
                                const AdamArgs& adam, Products products) {
  // elementwise
  { for_each_index(be, i, rule) } -> std::same_as<void>;
  { zip_map(be, x, x, y, i, on, Times{}) } -> std::same_as<void>;
  { copy_or_add(be, x, y, i, on) } -> std::same_as<void>;
  { broadcast_map(be, x, shape, x, shape, y, shape, Times{}) } -> std::same_as<void>;
  { sum_to(be, x, shape, y, shape, on) } -> std::same_as<void>;
  // linear and matmul
  // linear, matmul and conv2d take how to multiply (autocast: bfloat16 products)
  { linear_forward(be, x, x, x, y, i, i, i, products) } -> std::same_as<void>;
  { linear_backward_input(be, x, x, y, i, i, i, on, products) } -> std::same_as<void>;
  { linear_backward_weight(be, x, x, y, i, i, i, on, products) } -> std::same_as<void>;
  { linear_backward_bias(be, x, y, i, i, on) } -> std::same_as<void>;
  { matmul(be, x, x, y, i, i, i, on, on, on, products) } -> std::same_as<void>;
  // conv2d, the fused ReLU included
  { conv2d_forward_scratch(be, conv, products) } -> std::same_as<std::int64_t>;
  { conv2d_backward_scratch(be, conv, on, products) } -> std::same_as<std::int64_t>;
  { conv2d_forward(be, conv, x, x, x, y, y, on, products) } -> std::same_as<void>;
  { conv2d_backward(be, conv, x, x, x, y, on, y, on, y, on, y, x, products) } -> std::same_as<void>;
  // pool2d
  { max_pool2d_forward(be, pool, x, y, argmax) } -> std::same_as<void>;
  { max_pool2d_backward(be, pool, x, saved_argmax, y, on) } -> std::same_as<void>;
  { avg_pool2d_forward(be, pool, x, y) } -> std::same_as<void>;
  { avg_pool2d_backward(be, pool, x, y, on) } -> std::same_as<void>;
  { adaptive_avg_pool2d_forward(be, adaptive, x, y) } -> std::same_as<void>;
  { adaptive_avg_pool2d_backward(be, adaptive, x, y, on) } -> std::same_as<void>;
  // batch_norm
  { batch_norm_train_stats(be, bn, x, y, y, y, y, y, d, d) } -> std::same_as<void>;
  { batch_norm_eval_stats(be, bn, x, x, y, y, d) } -> std::same_as<void>;
  { batch_norm_apply(be, bn, x, x, x, x, x, y, on) } -> std::same_as<void>;
  { batch_norm_backward(be, bn, x, x, x, x, x, x, on, y, on, y, on, y, on, sums) } -> std::same_as<void>;
  // dropout
  { dropout_mask(be, rs, y, i, d) } -> std::same_as<void>;
  { apply_mask(be, x, x, y, i, i, on) } -> std::same_as<void>;
  // index_select's backward (its forward, with the copies, in CopyKernelsFor)
  { index_select_backward(be, x, target, y, i, i, i, i, on) } -> std::same_as<void>;
  { index_select_backward(be, x, index32, y, i, i, i, i, on) } -> std::same_as<void>;
  // reductions, softmax, loss
  { sum_dim(be, x, y, i, i, i, s) } -> std::same_as<void>;
  { broadcast_dim(be, x, y, i, i, i, s, on) } -> std::same_as<void>;
  { extremum_dim_backward(be, x, x, x, y, i, i, i, on) } -> std::same_as<void>;
  { softmax_forward(be, x, y, i, i, i, on) } -> std::same_as<void>;
  { softmax_backward(be, x, x, y, i, i, i, on, on) } -> std::same_as<void>;
  { nll_forward(be, x, target, y, y, d, i, i) } -> std::same_as<void>;
  { nll_backward(be, target, x, on, s, y, i, i, on) } -> std::same_as<void>;
  // optimizer steps
  { sgd_update(be, y, x, y, i, sgd) } -> std::same_as<void>;
  { adadelta_update(be, y, x, y, y, i, adadelta) } -> std::same_as<void>;
  { adam_update(be, y, x, y, y, y, i, adam) } -> std::same_as<void>;
};

/// The kernels of tag B that also take bfloat16 activations (each value converted to float,
/// the result rounded as it is stored; dropout's mask stays float).
template <class B>
concept KernelSetForBf16 = requires(B be, const bfloat16* x, bfloat16* y, const float* mask, float* new_mask,
                                    std::int64_t i, bool on, double d, const Pool2dGeometry& pool,
                                    const AdaptivePool2dGeometry& adaptive, std::int32_t* argmax,
                                    const std::int32_t* saved_argmax, const RandomStream& rs,
                                    const UnaryForward<Relu, bfloat16>& rule,
                                    const UnaryBackward<Relu, bfloat16>& grad_rule) {
  { for_each_index(be, i, rule) } -> std::same_as<void>;
  { for_each_index(be, i, grad_rule) } -> std::same_as<void>;
  { copy_or_add(be, x, y, i, on) } -> std::same_as<void>;
  { max_pool2d_forward(be, pool, x, y, argmax) } -> std::same_as<void>;
  { max_pool2d_backward(be, pool, x, saved_argmax, y, on) } -> std::same_as<void>;
  { avg_pool2d_forward(be, pool, x, y) } -> std::same_as<void>;
  { avg_pool2d_backward(be, pool, x, y, on) } -> std::same_as<void>;
  { adaptive_avg_pool2d_forward(be, adaptive, x, y) } -> std::same_as<void>;
  { adaptive_avg_pool2d_backward(be, adaptive, x, y, on) } -> std::same_as<void>;
  { dropout_mask(be, rs, new_mask, i, d) } -> std::same_as<void>;
  { apply_mask(be, x, mask, y, i, i, on) } -> std::same_as<void>;
};

/// The kernels of tag B for the dtypes that compare (T: float, double, std::int32_t,
/// std::int64_t, bool): comparisons write bool; amax, amin, argmax, argmin.
template <class B, class T>
concept CompareKernelsFor = requires(B be, const T* x, T* y, bool* mask, std::int64_t* index, std::int64_t i, bool on,
                                     const Shape& shape, Compare cmp, Extremum e) {
  { zip_map(be, x, x, mask, i, on, cmp) } -> std::same_as<void>;
  { broadcast_map(be, x, shape, x, shape, mask, shape, cmp) } -> std::same_as<void>;
  { extremum_dim(be, x, y, i, i, i, e) } -> std::same_as<void>;
  { arg_extremum_dim(be, x, index, i, i, i, e) } -> std::same_as<void>;
};

/// The kernels of tag B that move elements of every dtype (T: float, double, std::int32_t,
/// std::int64_t, bool, bfloat16): the views that copy, broadcasting, cat, index_select.
template <class B, class T>
concept CopyKernelsFor = requires(B be, const T* x, T* y, const CopyGeometry& g, const std::int64_t* index,
                                  const std::int32_t* index32, std::int64_t i, bool on) {
  { strided_copy(be, g, x, y, on) } -> std::same_as<void>;
  { index_select_forward(be, x, index, y, i, i, i, i) } -> std::same_as<void>;
  { index_select_forward(be, x, index32, y, i, i, i, i) } -> std::same_as<void>;
};

/// The kernels of tag B for the integer dtypes (T: std::int32_t, std::int64_t, bool):
/// sums that count, in int64.
template <class B, class T>
concept CountKernelsFor = requires(B be, const T* x, std::int64_t* y, std::int64_t i) {
  { sum_dim(be, x, y, i, i, i, i) } -> std::same_as<void>;
};

/// Every kernel, for float32 and float64, and those above for bfloat16, the comparisons,
/// the counts and the copies.
template <class B>
concept KernelSet = KernelSetFor<B, float> && KernelSetFor<B, double> && KernelSetForBf16<B> &&
    CompareKernelsFor<B, float> && CompareKernelsFor<B, double> && CompareKernelsFor<B, std::int32_t> &&
    CompareKernelsFor<B, std::int64_t> && CompareKernelsFor<B, bool> && CountKernelsFor<B, std::int32_t> &&
    CountKernelsFor<B, std::int64_t> && CountKernelsFor<B, bool> && CopyKernelsFor<B, float> &&
    CopyKernelsFor<B, double> && CopyKernelsFor<B, std::int32_t> && CopyKernelsFor<B, std::int64_t> &&
    CopyKernelsFor<B, bool> && CopyKernelsFor<B, bfloat16>;

}  // namespace tinynet::backend
