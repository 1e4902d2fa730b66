#pragma once
/// \file
/// nll_loss and cross_entropy.

#include "tinynet/core/detail/tensor.hpp"
#include "tinynet/ops/cast.hpp"
#include "tinynet/ops/elementwise.hpp"
#include "tinynet/ops/reduce.hpp"
#include "tinynet/ops/softmax.hpp"

namespace tinynet {

/// How a per-sample loss is reduced.
enum class Reduction { none, mean, sum };

/// Negative log-likelihood of class `target[n]` under log-probabilities `logp` [N, C].
/// target: int64 [N] with values in [0, C).
TINYNET_OP Tensor nll_loss(const Tensor& logp, const Tensor& target, Reduction reduction = Reduction::mean);

/// nll_loss(log_softmax(logits, 1), target). With `label_smoothing` ε in [0, 1] (as
/// PyTorch's), the target distribution is (1 - ε) one-hot + ε / C uniform over the C
/// classes: per sample (1 - ε) (-logp[t]) + ε mean_c(-logp[c]), reduced as `reduction` says.
TINYNET_OP Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction = Reduction::mean,
                                double label_smoothing = 0.0);

}  // namespace tinynet

#if !defined(TINYNET_OPS_DECLARED_ONLY)  // the bodies: core/config.hpp, TINYNET_OP

#include "tinynet/backend/cpu/loss.hpp"
#include "tinynet/backend/cuda/loss.hpp"  // empty in builds without CUDA

namespace tinynet {

namespace ops::detail {

// loss = reduce_n(-logp[n, t_n]);  dL/dlogp[n, t_n] = -dL/dloss (/ N for mean).  Saves targets.
class NllLossNode final : public autograd::Node {
 public:
  NllLossNode(Tensor target, std::int64_t classes, Reduction r)
      : target_(std::move(target)), classes_(classes), r_(r) {}
  const char* name() const override { return "nll_loss"; }
  void release() override { target_ = Tensor(); }
  void backward(const Tensor& gy) override {
    auto s = input_grad(0);
    const std::int64_t batch = target_.numel();
    dispatch(gy, name(), [&]<typename T>(auto be) {
      const T divisor = r_ == Reduction::mean ? static_cast<T>(batch) : T(1);
      nll_backward(be, target_.data<std::int64_t>(), gy.data<T>(), r_ != Reduction::none, divisor, s.grad.data<T>(),
                   batch, classes_, s.accumulate);
    });
  }

 private:
  Tensor target_;
  std::int64_t classes_;
  Reduction r_;
};

}  // namespace ops::detail

TINYNET_OP Tensor nll_loss(const Tensor& logp, const Tensor& target, Reduction reduction) {
  using namespace ops::detail;
  if (logp.defined() && logp.dtype() == DType::bfloat16)
    return in_float32(logp, [&](const Tensor& in) { return nll_loss(in, target, reduction); });
  check_float_input("nll_loss", logp);
  check_rank("nll_loss", logp, 2, "input", "batch, classes");
  TINYNET_CHECK(TypeError, target.defined() && target.dtype() == DType::int64,
                "nll_loss: target must be an int64 tensor, got ",
                target.defined() ? dtype_name(target.dtype()) : "undefined");
  TINYNET_CHECK(TypeError, target.device() == logp.device(), "nll_loss: target is on ", target.device(),
                " but the input is on ", logp.device());
  TINYNET_CHECK(ShapeError, target.shape() == Shape{logp.size(0)}, "nll_loss: target has shape ", target.shape(),
                ", expected [", logp.size(0), "] for input of shape ", logp.shape());
  const std::int64_t batch = logp.size(0), classes = logp.size(1);
  TINYNET_CHECK(ValueError, batch > 0 || reduction != Reduction::mean, "nll_loss: mean over an empty batch");
  Tensor per_sample = new_output(Shape{batch}, logp);
  Tensor out = reduction == Reduction::none ? per_sample : new_output(Shape{}, logp);
  // The kernels check the targets (on the device: reading them here would stall the stream).
  dispatch(logp, "nll_loss", [&]<typename T>(auto be) {
    nll_forward(be, logp.data<T>(), target.data<std::int64_t>(), per_sample.data<T>(),
                reduction == Reduction::none ? nullptr : out.data<T>(),
                reduction == Reduction::mean ? static_cast<double>(batch) : 1.0, batch, classes);
  });
  if (autograd::needs_grad(logp))
    autograd::record(out, std::make_shared<NllLossNode>(target, classes, reduction), {&logp});
  return out;
}

TINYNET_OP Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction,
                                double label_smoothing) {
  TINYNET_CHECK(ValueError, label_smoothing >= 0.0 && label_smoothing <= 1.0,
                "cross_entropy: label_smoothing must be in [0, 1], got ", label_smoothing);
  const Tensor logp = log_softmax(logits, 1);
  const Tensor nll = nll_loss(logp, target, reduction);
  if (label_smoothing == 0.0) return nll;
  const Tensor uniform = mean(neg(logp), 1);  // per sample: mean_c(-logp[c])
  const Tensor smooth = reduction == Reduction::none   ? uniform
                        : reduction == Reduction::mean ? mean(uniform)
                                                       : sum(uniform);
  return add(mul(nll, 1.0 - label_smoothing), mul(smooth, label_smoothing));
}

}  // namespace tinynet

#endif  // !TINYNET_OPS_DECLARED_ONLY
