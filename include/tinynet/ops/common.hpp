#pragma once
/// \file
/// Argument checks shared by every op, with messages that name the op.

#include "tinynet/autograd/node.hpp"
#include "tinynet/backend/cpu/parallel.hpp"
#include "tinynet/core/tensor.hpp"

#if defined(TINYNET_WITH_CUDA)
#include "tinynet/backend/cuda/launch.hpp"
#endif

namespace tinynet::ops::detail {

/// CUDA tensors need a build with the CUDA backend (backend/cuda).
inline void check_backend(const char* op, const Tensor& t) {
#if !defined(TINYNET_WITH_CUDA)
  TINYNET_CHECK(TypeError, t.device().is_cpu(), op, ": tensor on ", t.device(),
                   " but this build has no kernel for it (compile with nvcc for CUDA)");
#else
  (void)op;
  (void)t;
#endif
}

/// Runs `f(i)` for every i in [0, n) where `on` lives: CPU threads, or a device kernel
/// (then `f` must be TINYNET_HOST_DEVICE and capture only values and device pointers).
template <typename F>
void for_each_index([[maybe_unused]] const Tensor& on, std::int64_t n, const F& f) {
#if defined(TINYNET_WITH_CUDA)
  if (on.device().is_cuda()) {
    backend::cuda::for_each_index(n, f);
    return;
  }
#endif
  backend::cpu::parallel_for(n, backend::cpu::kElementwiseGrain, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) f(i);
  });
}

/// Defined, floating, on a device this build has kernels for.
inline void check_float_input(const char* op, const Tensor& t, const char* what = "input") {
  TINYNET_CHECK(Error, t.defined(), op, ": ", what, " is an undefined tensor");
  TINYNET_CHECK(TypeError, is_floating(t.dtype()), op, ": ", what, " must be float32 or float64, got ", t.dtype());
  check_backend(op, t);
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
