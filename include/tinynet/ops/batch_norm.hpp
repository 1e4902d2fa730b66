#pragma once
/// \file
/// batch_norm over the channel dim of an [N, C], [N, C, L] or [N, C, H, W] input.

#include "tinynet/core/detail/tensor.hpp"
#include "tinynet/ops/cast.hpp"

namespace tinynet {

/// Batch normalisation (PyTorch's F.batch_norm). In training, normalises with the batch's
/// mean and biased variance and, when running_mean / running_var are given, updates them
/// in place: r = (1 - momentum) r + momentum * batch statistic (the variance unbiased).
/// Otherwise normalises with the running statistics. weight / bias may be undefined.
TINYNET_OP Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                             const Tensor& weight = Tensor(), const Tensor& bias = Tensor(), bool training = true,
                             double momentum = 0.1, double eps = 1e-5);

/// relu(batch_norm(...)) in one op (PyTorch's fused BNReLU2d): the same values and
/// gradients, without the ReLU's own passes over the activation. BatchNorm1d/2d absorb the
/// ReLU after them in Sequential through it.
TINYNET_OP Tensor batch_norm_relu(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(), bool training = true,
                                  double momentum = 0.1, double eps = 1e-5);

}  // namespace tinynet

#if !defined(TINYNET_OPS_DECLARED_ONLY)  // the bodies: core/config.hpp, TINYNET_OP

#include "tinynet/backend/bf16_activations.hpp"
#include "tinynet/backend/cpu/batch_norm.hpp"
#include "tinynet/backend/cuda/batch_norm.hpp"  // empty in builds without CUDA
#include "tinynet/ops/common.hpp"

namespace tinynet {

namespace ops::detail {

// x's [N, C, L or H * W] (x of rank 2 to 4).
inline backend::BatchNormGeometry batch_norm_geometry(const Tensor& x) {
  std::int64_t inner = 1;  // L, or H * W
  for (int d = 2; d < x.dim(); ++d) inner *= x.size(d);
  return {x.size(0), x.size(1), inner};
}

// y = (x - mean) invstd w + b, with batch or running statistics; see the kernel for the
// gradient. Saves x, the statistics used, and w; fused with a ReLU, also its output y_relu
// (the gradient flows where it is positive). A bfloat16 x (under autocast, where the
// backend reads it as it is) gets a bfloat16 gradient; the rest is float32.
class BatchNormNode final : public autograd::Node {
 public:
  BatchNormNode(Tensor x, Tensor mean, Tensor invstd, Tensor w, backend::BatchNormGeometry g, bool training,
                Tensor y_relu)
      : x_(std::move(x)),
        mean_(std::move(mean)),
        invstd_(std::move(invstd)),
        w_(std::move(w)),
        y_relu_(std::move(y_relu)),
        g_(g),
        training_(training) {}
  const char* name() const override { return y_relu_.defined() ? "batch_norm_relu" : "batch_norm"; }
  void release() override { x_ = mean_ = invstd_ = w_ = y_relu_ = Tensor(); }
  void backward(const Tensor& gy) override {
    autograd::GradSlot sx, sw, sb;
    if (needs_input_grad(0)) sx = input_grad(0);
    if (needs_input_grad(1)) sw = input_grad(1);
    if (needs_input_grad(2)) sb = input_grad(2);
    Tensor sums(Shape{2 * g_.c}, {DType::float64, gy.device(), false});
    backend::dispatch_activations<backend::BatchNormBf16>(
        x_.device(), x_.dtype(), name(), [&]<typename A, typename P>(auto be) {
          batch_norm_backward(be, g_, x_.data<A>(), mean_.data<P>(), invstd_.data<P>(), data_or_null<P>(w_),
                              gy.data<P>(), data_or_null<P>(y_relu_), training_, sx.template data_or_null<A>(),
                              sx.accumulate, sw.template data_or_null<P>(), sw.accumulate,
                              sb.template data_or_null<P>(), sb.accumulate, sums.data<double>());
        });
  }

 private:
  Tensor x_, mean_, invstd_, w_, y_relu_;
  backend::BatchNormGeometry g_;
  bool training_;
};

// batch_norm, and with `relu` batch_norm_relu (`op` names it in errors).
inline Tensor batch_norm_run(const char* op, const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                             const Tensor& weight, const Tensor& bias, bool training, double momentum, double eps,
                             bool relu) {
  // A bfloat16 input: under autocast, where the backend reads it as it is, its kernels take
  // it (no float32 copy to make, nor a gradient to cast back); elsewhere through float32.
  const bool bf16 = bf16_activation(x) && x.dim() >= 2 && x.dim() <= 4 &&
                    backend::takes_bf16(x.device(), backend::BatchNormBf16{batch_norm_geometry(x)});
  if (x.defined() && x.dtype() == DType::bfloat16 && !bf16)  // statistics and parameters float32
    return in_float32(x, [&](const Tensor& in) {
      return batch_norm_run(op, in, running_mean, running_var, weight, bias, training, momentum, eps, relu);
    });
  if (bf16)
    check_activation_input(op, x);
  else
    check_float_input(op, x);
  TINYNET_CHECK(ShapeError, x.dim() >= 2 && x.dim() <= 4, op,
                ": expected input of rank 2 (N, C), 3 (N, C, L) or 4 (N, C, H, W), got shape ", x.shape());
  const backend::BatchNormGeometry g = batch_norm_geometry(x);
  const std::int64_t c = g.c;
  // The statistics, parameters and output: float32 for a bfloat16 input, else x's dtype.
  const TensorOptions stats{bf16 ? DType::float32 : x.dtype(), x.device(), false};
  for (const Tensor* t : {&running_mean, &running_var, &weight, &bias})
    if (t->defined()) {
      if (bf16)
        TINYNET_CHECK(TypeError, t->dtype() == DType::float32 && t->device() == x.device(), op,
                      ": a per-channel tensor is ", t->dtype(), " on ", t->device(), " but a bfloat16 input on ",
                      x.device(), " takes float32 ones there");
      else
        check_same_kind(op, x, *t, "a per-channel tensor");
      TINYNET_CHECK(ShapeError, t->shape() == Shape{c}, op, ": per-channel tensors must have shape [", c, "], got ",
                    t->shape());
    }
  TINYNET_CHECK(ValueError, training || (running_mean.defined() && running_var.defined()), op,
                ": evaluation mode needs running_mean and running_var");
  TINYNET_CHECK(ValueError, !training || g.count() > 1, op, ": expected more than 1 value per channel when training, ",
                "got input shape ", x.shape());

  Tensor mean(Shape{c}, stats), invstd(Shape{c}, stats), y(x.shape(), stats);
  backend::dispatch_activations<backend::BatchNormBf16>(
      x.device(), x.dtype(), op, [&]<typename A, typename P>(auto be) {
        if (training) {
          Tensor var(Shape{c}, stats);
          batch_norm_train_stats(be, g, x.data<A>(), mean.data<P>(), var.data<P>(), invstd.data<P>(),
                                 data_or_null<P>(running_mean), data_or_null<P>(running_var), momentum, eps);
        } else {
          batch_norm_eval_stats(be, g, running_mean.data<P>(), running_var.data<P>(), mean.data<P>(), invstd.data<P>(),
                                eps);
        }
        batch_norm_apply(be, g, x.data<A>(), mean.data<P>(), invstd.data<P>(), data_or_null<P>(weight),
                         data_or_null<P>(bias), y.data<P>(), relu);
      });
  if (autograd::any_needs_grad(x, weight, bias))
    autograd::record(
        y, std::make_shared<BatchNormNode>(x, mean, invstd, weight, g, training, relu ? y.detach() : Tensor()),
        {&x, &weight, &bias});
  return y;
}

}  // namespace ops::detail

TINYNET_OP Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                             const Tensor& weight, const Tensor& bias, bool training, double momentum, double eps) {
  return ops::detail::batch_norm_run("batch_norm", x, running_mean, running_var, weight, bias, training, momentum, eps,
                                     false);
}

TINYNET_OP Tensor batch_norm_relu(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                                  double eps) {
  return ops::detail::batch_norm_run("batch_norm_relu", x, running_mean, running_var, weight, bias, training, momentum,
                                     eps, true);
}

}  // namespace tinynet

#endif  // !TINYNET_OPS_DECLARED_ONLY
