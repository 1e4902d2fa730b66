#pragma once
/// \file
/// Reductions: sum and mean (over everything or one dim), argmax.

#include "tinynet/backend/cpu/reduce.hpp"
#include "tinynet/backend/cuda/reduce.hpp"  // empty in builds without CUDA
#include "tinynet/ops/cast.hpp"
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
  const int d = all ? 0 : x.shape().wrap_dim(dim);
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
  const int d = all ? 0 : x.shape().wrap_dim(dim);
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

}  // namespace ops::detail

/// Sum of all elements (a scalar). int32, int64 and bool tensors sum to int64: sum(eq(pred,
/// target)) counts the matches.
inline Tensor sum(const Tensor& x) {
  return ops::detail::in_float32(
      x, [&](const Tensor& in) { return ops::detail::reduce_sum("sum", in, 0, true, false, false); });
}
/// Sum over `dim` (negative counts from the end); `keepdim` keeps it with extent 1.
/// int32, int64 and bool tensors sum to int64.
inline Tensor sum(const Tensor& x, int dim, bool keepdim = false) {
  return ops::detail::in_float32(
      x, [&](const Tensor& in) { return ops::detail::reduce_sum("sum", in, dim, false, keepdim, false); });
}
/// Mean of all elements (a scalar).
inline Tensor mean(const Tensor& x) {
  return ops::detail::in_float32(
      x, [&](const Tensor& in) { return ops::detail::reduce_sum("mean", in, 0, true, false, true); });
}
/// Mean over `dim`.
inline Tensor mean(const Tensor& x, int dim, bool keepdim = false) {
  return ops::detail::in_float32(
      x, [&](const Tensor& in) { return ops::detail::reduce_sum("mean", in, dim, false, keepdim, true); });
}

/// Index of the largest element along `dim` (int64, not differentiable; first one on ties).
inline Tensor argmax(const Tensor& x, int dim, bool keepdim = false) {
  if (x.defined() && x.dtype() == DType::bfloat16) return argmax(x.to(DType::float32), dim, keepdim);  // exact
  ops::detail::check_float_input("argmax", x);
  const int d = x.shape().wrap_dim(dim);
  const auto split = ops::detail::split_at(x.shape(), d);
  TINYNET_CHECK(ValueError, split.n > 0, "argmax: dimension ", dim, " of shape ", x.shape(), " is empty");
  Tensor y(ops::detail::reduced_shape(x.shape(), d, keepdim), {DType::int64, x.device(), false});
  ops::detail::dispatch(x, "argmax", [&]<typename T>(auto be) {
    argmax_dim(be, x.data<T>(), y.data<std::int64_t>(), split.outer, split.n, split.inner);
  });
  return y;
}

}  // namespace tinynet
