#pragma once
/// \file
/// Argument checks shared by every op, with messages that name the op.

#include "tinynet/autograd/node.hpp"
#include "tinynet/core/tensor.hpp"

namespace tinynet::ops::detail {

/// The op runs on the CPU backend; CUDA tensors need the CUDA build (backend/cuda).
inline void check_cpu(const char* op, const Tensor& t) {
  TINYNET_CHECK(TypeError, t.device().is_cpu(), op, ": tensor on ", t.device(),
                   " but this build has no kernel for it (compile with nvcc for CUDA)");
}

/// Defined, floating, on the CPU.
inline void check_float_input(const char* op, const Tensor& t, const char* what = "input") {
  TINYNET_CHECK(Error, t.defined(), op, ": ", what, " is an undefined tensor");
  TINYNET_CHECK(TypeError, is_floating(t.dtype()), op, ": ", what, " must be float32 or float64, got ", t.dtype());
  check_cpu(op, t);
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

/// A new output tensor with `like`'s dtype and device.
inline Tensor new_output(const Shape& shape, const Tensor& like) {
  return Tensor(shape, {like.dtype(), like.device(), false});
}

}  // namespace tinynet::ops::detail
