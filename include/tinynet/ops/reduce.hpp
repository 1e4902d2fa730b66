#pragma once
/// \file
/// Reductions over everything or one dim: sum and mean, amax and amin, argmax and argmin.

#include "tinynet/core/detail/tensor.hpp"
#include "tinynet/ops/cast.hpp"

namespace tinynet {

/// Sum of all elements (a scalar). int32, int64 and bool tensors sum to int64: sum(eq(pred,
/// target)) counts the matches.
TINYNET_OP Tensor sum(const Tensor& x);

/// Sum over `dim` (negative counts from the end); `keepdim` keeps it with extent 1.
/// int32, int64 and bool tensors sum to int64.
TINYNET_OP Tensor sum(const Tensor& x, int dim, bool keepdim = false);

/// Mean of all elements (a scalar).
TINYNET_OP Tensor mean(const Tensor& x);

/// Mean over `dim`.
TINYNET_OP Tensor mean(const Tensor& x, int dim, bool keepdim = false);

/// The largest value along `dim` (negative counts from the end), `keepdim` keeping it with
/// extent 1; NaN where any is NaN. The gradient is shared evenly among the entries equal to
/// the result (PyTorch's amax). Takes float32, float64, int32, int64 and bool; bfloat16 through float32 (exact).
TINYNET_OP Tensor amax(const Tensor& x, int dim, bool keepdim = false);

/// The smallest value along `dim`, as amax.
TINYNET_OP Tensor amin(const Tensor& x, int dim, bool keepdim = false);

/// The largest of all elements (a scalar), as amax over every dim.
TINYNET_OP Tensor amax(const Tensor& x);

/// The smallest of all elements (a scalar).
TINYNET_OP Tensor amin(const Tensor& x);

/// Index of the largest element along `dim` (int64, not differentiable; the first one on
/// ties, the first NaN if any). Takes float32, float64, int32, int64 and bfloat16 tensors.
TINYNET_OP Tensor argmax(const Tensor& x, int dim, bool keepdim = false);

/// Index of the smallest element along `dim`, as argmax.
TINYNET_OP Tensor argmin(const Tensor& x, int dim, bool keepdim = false);

/// Index of the largest element of x flattened (a scalar).
TINYNET_OP Tensor argmax(const Tensor& x);

/// Index of the smallest element of x flattened (a scalar).
TINYNET_OP Tensor argmin(const Tensor& x);

}  // namespace tinynet

#if !defined(TINYNET_OPS_DECLARED_ONLY)  // the bodies: core/config.hpp, TINYNET_OP

#include "tinynet/backend/cpu/reduce.hpp"
#include "tinynet/backend/cuda/reduce.hpp"  // empty in builds without CUDA
#include "tinynet/ops/common.hpp"

namespace tinynet {

namespace ops::detail {

/// Splits `s` around `dim` into [outer, n, inner].
struct DimSplit {
  std::int64_t outer = 1, n = 1, inner = 1;
};
inline DimSplit split_at(const Shape& s, int dim) {
  DimSplit r;
  for (int d = 0; d < s.rank(); ++d) {
    if (d < dim)
      r.outer *= s[d];
    else if (d == dim)
      r.n = s[d];
    else
      r.inner *= s[d];
  }
  return r;
}

inline Shape reduced_shape(const Shape& s, int dim, bool keepdim) {
  Shape out;
  for (int d = 0; d < s.rank(); ++d) {
    if (d != dim)
      out.push_back(s[d]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

// y[o,i] = scale * sum_k x[o,k,i];  dL/dx[o,k,i] = scale * dL/dy[o,i].
class SumNode final : public autograd::Node {
 public:
  SumNode(const char* name, DimSplit split, double scale) : name_(name), split_(split), scale_(scale) {}
  const char* name() const override { return name_; }
  void backward(const Tensor& gy) override {
    auto slot = input_grad(0);
    dispatch(gy, name(), [&]<typename T>(auto be) {
      broadcast_dim(be, gy.data<T>(), slot.grad.data<T>(), split_.outer, split_.n, split_.inner, static_cast<T>(scale_),
                    slot.accumulate);
    });
  }

 private:
  const char* name_;
  DimSplit split_;
  double scale_;
};

// Sums of int32, int64 and bool tensors count: int64, exact, not differentiable (PyTorch's).
inline Tensor integral_sum(const Tensor& x, int dim, bool all, bool keepdim) {
  require_compiled(x.device(), "sum");
  const int d = all ? 0 : wrap_dim("sum", x.shape(), dim);
  const DimSplit split = all ? DimSplit{1, x.numel(), 1} : split_at(x.shape(), d);
  Tensor y(all ? Shape{} : reduced_shape(x.shape(), d, keepdim), {DType::int64, x.device(), false});
  dispatch_over<DTypes::integral>(x, "sum", [&]<typename T>(auto be) {
    sum_dim(be, x.data<T>(), y.data<std::int64_t>(), split.outer, split.n, split.inner, std::int64_t{1});
  });
  return y;
}

inline Tensor reduce_sum(const char* op, const Tensor& x, int dim, bool all, bool keepdim, bool mean) {
  if (!mean && x.defined() && is_integral(x.dtype())) return integral_sum(x, dim, all, keepdim);
  check_float_input(op, x);
  const int d = all ? 0 : wrap_dim(op, x.shape(), dim);
  const DimSplit split = all ? DimSplit{1, x.numel(), 1} : split_at(x.shape(), d);
  TINYNET_CHECK(ValueError, !mean || split.n > 0, op, ": mean of an empty dimension");
  const Shape os = all ? Shape{} : reduced_shape(x.shape(), d, keepdim);
  const double scale = mean ? 1.0 / static_cast<double>(split.n) : 1.0;
  Tensor y = new_output(os, x);
  dispatch(x, op, [&]<typename T>(auto be) {
    sum_dim(be, x.data<T>(), y.data<T>(), split.outer, split.n, split.inner, static_cast<T>(scale));
  });
  if (autograd::needs_grad(x)) autograd::record(y, std::make_shared<SumNode>(op, split, scale), {&x});
  return y;
}

/// The split of `x` for a reduction over `dim` (every element when `all`), and the shape of
/// its result; ValueError naming `op` when that dim is empty and `nonempty`.
struct ReductionPlan {
  DimSplit split;
  Shape out;
};
inline ReductionPlan reduction_over(const char* op, const Tensor& x, int dim, bool all, bool keepdim, bool nonempty) {
  TINYNET_CHECK(Error, x.defined(), op, ": input is an undefined tensor");
  const int d = all ? 0 : wrap_dim(op, x.shape(), dim);
  // Member by member: nvcc 13's device front end crashes on this as one braced initializer.
  ReductionPlan r;
  r.split = all ? DimSplit{1, x.numel(), 1} : split_at(x.shape(), d);
  r.out = all ? Shape{} : reduced_shape(x.shape(), d, keepdim);
  if (nonempty && all) TINYNET_CHECK(ValueError, r.split.n > 0, op, ": the input of shape ", x.shape(), " is empty");
  if (nonempty) TINYNET_CHECK(ValueError, r.split.n > 0, op, ": dimension ", dim, " of shape ", x.shape(), " is empty");
  return r;
}

// y[o,i] = max_k x[o,k,i] (or min);  dL/dx[o,k,i] = dL/dy[o,i] / t where x[o,k,i] == y[o,i]
// (t such entries: ties share evenly), 0 elsewhere.  Saves x and y.
class ExtremumNode final : public autograd::Node {
 public:
  ExtremumNode(const char* name, Tensor x, Tensor y, DimSplit split)
      : name_(name), x_(std::move(x)), y_(std::move(y)), split_(split) {}
  const char* name() const override { return name_; }
  void release() override { x_ = y_ = Tensor(); }
  void backward(const Tensor& gy) override {
    const autograd::GradSlot slot = input_grad(0);
    dispatch(gy, name(), [&]<typename T>(auto be) {
      extremum_dim_backward(be, x_.data<T>(), y_.data<T>(), gy.data<T>(), slot.grad.data<T>(), split_.outer, split_.n,
                            split_.inner, slot.accumulate);
    });
  }

 private:
  const char* name_;
  Tensor x_, y_;
  DimSplit split_;
};

inline Tensor extremum(const char* op, backend::Extremum e, const Tensor& x, int dim, bool all, bool keepdim) {
  const ReductionPlan r = reduction_over(op, x, dim, all, keepdim, true);
  require_compiled(x.device(), op);
  Tensor y = new_output(r.out, x);
  dispatch_over<DTypes::comparable>(x, op, [&]<typename T>(auto be) {
    extremum_dim(be, x.data<T>(), y.data<T>(), r.split.outer, r.split.n, r.split.inner, e);
  });
  if (autograd::needs_grad(x)) autograd::record(y, std::make_shared<ExtremumNode>(op, x, y.detach(), r.split), {&x});
  return y;
}

inline Tensor arg_extremum(const char* op, backend::Extremum e, const Tensor& x, int dim, bool all, bool keepdim) {
  if (x.defined() && x.dtype() == DType::bfloat16) return arg_extremum(op, e, x.to(DType::float32), dim, all, keepdim);
  const ReductionPlan r = reduction_over(op, x, dim, all, keepdim, true);
  TINYNET_CHECK(TypeError, x.dtype() != DType::bool_, op, ": expected a float32, float64, int32 or int64 tensor, got ",
                x.dtype());
  Tensor y(r.out, {DType::int64, x.device(), false});
  dispatch_over<DTypes::comparable>(x, op, [&]<typename T>(auto be) {
    arg_extremum_dim(be, x.data<T>(), y.data<std::int64_t>(), r.split.outer, r.split.n, r.split.inner, e);
  });
  return y;
}

}  // namespace ops::detail

TINYNET_OP Tensor sum(const Tensor& x) {
  return ops::detail::in_float32(
      x, [&](const Tensor& in) { return ops::detail::reduce_sum("sum", in, 0, true, false, false); });
}

TINYNET_OP Tensor sum(const Tensor& x, int dim, bool keepdim) {
  return ops::detail::in_float32(
      x, [&](const Tensor& in) { return ops::detail::reduce_sum("sum", in, dim, false, keepdim, false); });
}

TINYNET_OP Tensor mean(const Tensor& x) {
  return ops::detail::in_float32(
      x, [&](const Tensor& in) { return ops::detail::reduce_sum("mean", in, 0, true, false, true); });
}

TINYNET_OP Tensor mean(const Tensor& x, int dim, bool keepdim) {
  return ops::detail::in_float32(
      x, [&](const Tensor& in) { return ops::detail::reduce_sum("mean", in, dim, false, keepdim, true); });
}

TINYNET_OP Tensor amax(const Tensor& x, int dim, bool keepdim) {
  return ops::detail::in_float32(x, [&](const Tensor& in) {
    return ops::detail::extremum("amax", backend::Extremum::max, in, dim, false, keepdim);
  });
}

TINYNET_OP Tensor amin(const Tensor& x, int dim, bool keepdim) {
  return ops::detail::in_float32(x, [&](const Tensor& in) {
    return ops::detail::extremum("amin", backend::Extremum::min, in, dim, false, keepdim);
  });
}

TINYNET_OP Tensor amax(const Tensor& x) {
  return ops::detail::in_float32(
      x, [&](const Tensor& in) { return ops::detail::extremum("amax", backend::Extremum::max, in, 0, true, false); });
}

TINYNET_OP Tensor amin(const Tensor& x) {
  return ops::detail::in_float32(
      x, [&](const Tensor& in) { return ops::detail::extremum("amin", backend::Extremum::min, in, 0, true, false); });
}

TINYNET_OP Tensor argmax(const Tensor& x, int dim, bool keepdim) {
  return ops::detail::arg_extremum("argmax", backend::Extremum::max, x, dim, false, keepdim);
}

TINYNET_OP Tensor argmin(const Tensor& x, int dim, bool keepdim) {
  return ops::detail::arg_extremum("argmin", backend::Extremum::min, x, dim, false, keepdim);
}

TINYNET_OP Tensor argmax(const Tensor& x) {
  return ops::detail::arg_extremum("argmax", backend::Extremum::max, x, 0, true, false);
}

TINYNET_OP Tensor argmin(const Tensor& x) {
  return ops::detail::arg_extremum("argmin", backend::Extremum::min, x, 0, true, false);
}

}  // namespace tinynet

#endif  // !TINYNET_OPS_DECLARED_ONLY
