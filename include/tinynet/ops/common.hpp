#pragma once
/// \file
/// What every op body shares: argument checks whose messages name the op, output
/// allocation, and dispatch() — the one call from an op into the kernels of its
/// tensors' backend and scalar type.

#include "tinynet/autograd/node.hpp"
#include "tinynet/backend/backend.hpp"
#include "tinynet/core/detail/tensor.hpp"

namespace tinynet::ops::detail {

/// Calls `f.template operator()<T>(tag)` with T the scalar type of `on` (float32 or
/// float64) and `tag` its device's backend (backend/backend.hpp). Kernels are then called
/// unqualified with the tag as first argument:
/// `dispatch(x, "relu", [&]<typename T>(auto be) { for_each_index(be, n, ...); })`.
template <typename F>
void dispatch(const Tensor& on, const char* op, F&& f) {
  backend::dispatch(on.device(), on.dtype(), op, std::forward<F>(f));
}

/// dispatch() for the ops whose kernels also take bfloat16 activations (T = bfloat16).
template <typename F>
void dispatch_with_bf16(const Tensor& on, const char* op, F&& f) {
  backend::dispatch_with_bf16(on.device(), on.dtype(), op, std::forward<F>(f));
}

using backend::DTypes;

/// dispatch() over another set of dtypes (backend/backend.hpp): `dispatch_over<DTypes::all>(x,
/// "cat", [&]<typename T>(auto be) { ... })`.
template <DTypes Set, typename F>
void dispatch_over(const Tensor& on, const char* op, F&& f) {
  backend::dispatch_over<Set>(on.device(), on.dtype(), op, std::forward<F>(f));
}

/// `t`'s data, or null when `t` is undefined (an optional operand: a bias, a saved output).
template <typename T>
T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

/// Defined, floating, on a device this build has kernels for.
inline void check_float_input(const char* op, const Tensor& t, const char* what = "input") {
  TINYNET_CHECK(Error, t.defined(), op, ": ", what, " is an undefined tensor");
  TINYNET_CHECK(TypeError, is_floating(t.dtype()), op, ": ", what, " must be float32 or float64, got ", t.dtype(),
                tinynet::detail::compute_dtype_hint(t.dtype()));
  require_compiled(t.device(), op);
}

/// check_float_input for the ops that also take bfloat16 activations.
inline void check_activation_input(const char* op, const Tensor& t, const char* what = "input") {
  TINYNET_CHECK(Error, t.defined(), op, ": ", what, " is an undefined tensor");
  TINYNET_CHECK(TypeError, is_floating(t.dtype()) || t.dtype() == DType::bfloat16, op, ": ", what,
                " must be float32, float64 or bfloat16, got ", t.dtype());
  require_compiled(t.device(), op);
}

/// `b` has the same dtype and device as `a`.
inline void check_same_kind(const char* op, const Tensor& a, const Tensor& b, const char* what) {
  TINYNET_CHECK(TypeError, a.dtype() == b.dtype(), op, ": ", what, " is ", b.dtype(), " but the input is ", a.dtype());
  TINYNET_CHECK(TypeError, a.device() == b.device(), op, ": ", what, " is on ", b.device(), " but the input is on ",
                a.device());
}

/// `t` has rank `rank`.
inline void check_rank(const char* op, const Tensor& t, int rank, const char* what, const char* layout) {
  TINYNET_CHECK(ShapeError, t.dim() == rank, op, ": expected ", what, " of rank ", rank, " (", layout, "), got shape ",
                t.shape());
}

/// `dim` of a tensor of shape `s` in [0, rank + extra), negative counting from the end (extra
/// is 1 for the ops that insert a dim: unsqueeze, stack); IndexError naming `op` otherwise.
inline int wrap_dim(const char* op, const Shape& s, int dim, int extra = 0) {
  const int n = s.rank() + extra, w = dim < 0 ? dim + n : dim;
  TINYNET_CHECK(IndexError, w >= 0 && w < n, op, ": dimension ", dim, " out of range for shape ", s, " (expected in [",
                -n, ", ", n - 1, "])");
  return w;
}

/// A new output tensor with `like`'s dtype and device.
inline Tensor new_output(const Shape& shape, const Tensor& like) {
  return Tensor(shape, {like.dtype(), like.device(), false});
}

}  // namespace tinynet::ops::detail
