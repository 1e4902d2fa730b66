#pragma once
/// \file
/// softmax and log_softmax over one dim (numerically stable: the max is subtracted first).

#include "tinynet/core/detail/tensor.hpp"
#include "tinynet/ops/cast.hpp"
#include "tinynet/ops/reduce.hpp"

namespace tinynet {

/// exp(x) / sum(exp(x)) along `dim`.
TINYNET_OP Tensor softmax(const Tensor& x, int dim);

/// x - log(sum(exp(x))) along `dim`, computed without overflow for large |x|.
TINYNET_OP Tensor log_softmax(const Tensor& x, int dim);

}  // namespace tinynet

#if !defined(TINYNET_OPS_DECLARED_ONLY)  // the bodies: core/config.hpp, TINYNET_OP

#include "tinynet/backend/cpu/softmax.hpp"
#include "tinynet/backend/cuda/softmax.hpp"  // empty in builds without CUDA

namespace tinynet {

namespace ops::detail {

// log_softmax: dx = gy - exp(y) sum(gy);  softmax: dx = y (gy - sum(gy y)).  Saves y.
class SoftmaxNode final : public autograd::Node {
 public:
  SoftmaxNode(Tensor y, DimSplit split, bool log) : y_(std::move(y)), split_(split), log_(log) {}
  const char* name() const override { return log_ ? "log_softmax" : "softmax"; }
  void release() override { y_ = Tensor(); }
  void backward(const Tensor& gy) override {
    auto s = input_grad(0);
    dispatch(gy, name(), [&]<typename T>(auto be) {
      softmax_backward(be, y_.data<T>(), gy.data<T>(), s.grad.data<T>(), split_.outer, split_.n, split_.inner, log_,
                       s.accumulate);
    });
  }

 private:
  Tensor y_;
  DimSplit split_;
  bool log_;
};

inline Tensor softmax_impl(const Tensor& x, int dim, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  check_float_input(op, x);
  TINYNET_CHECK(ShapeError, x.dim() >= 1, op, ": expected at least one dimension, got a scalar");
  const auto split = split_at(x.shape(), x.shape().wrap_dim(dim));
  Tensor y = new_output(x.shape(), x);
  dispatch(x, op, [&]<typename T>(auto be) {
    softmax_forward(be, x.data<T>(), y.data<T>(), split.outer, split.n, split.inner, log);
  });
  if (autograd::needs_grad(x)) autograd::record(y, std::make_shared<SoftmaxNode>(y.detach(), split, log), {&x});
  return y;
}

}  // namespace ops::detail

TINYNET_OP Tensor softmax(const Tensor& x, int dim) {
  return ops::detail::in_float32(x, [&](const Tensor& in) { return ops::detail::softmax_impl(in, dim, false); });
}

TINYNET_OP Tensor log_softmax(const Tensor& x, int dim) {
  return ops::detail::in_float32(x, [&](const Tensor& in) { return ops::detail::softmax_impl(in, dim, true); });
}

}  // namespace tinynet

#endif  // !TINYNET_OPS_DECLARED_ONLY
