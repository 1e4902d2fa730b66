#pragma once
/// \file
/// nll_loss and cross_entropy.

#include "tinynet/backend/cpu/softmax.hpp"
#include "tinynet/ops/softmax.hpp"

#if defined(TINYNET_WITH_CUDA)
#include "tinynet/backend/cuda/softmax.hpp"
#endif

namespace tinynet {

/// How a per-sample loss is reduced.
enum class Reduction { none, mean, sum };

namespace ops::detail {

// loss = reduce_n(-logp[n, t_n]);  dL/dlogp[n, t_n] = -dL/dloss (/ N for mean).  Saves targets.
class NllLossNode final : public autograd::Node {
 public:
  NllLossNode(Tensor target, std::int64_t classes, Reduction r) : target_(std::move(target)), classes_(classes), r_(r) {}
  const char* name() const override { return "nll_loss"; }
  void release() override { target_ = Tensor(); }
  void backward(const Tensor& gy) override {
    auto s = input_grad(0);
    const std::int64_t batch = target_.numel();
    dispatch_floating(gy.dtype(), name(), [&]<typename T>() {
#if defined(TINYNET_WITH_CUDA)
      if (gy.device().is_cuda()) {
        const T divisor = r_ == Reduction::mean ? static_cast<T>(batch) : T(1);
        backend::cuda::nll_backward(target_.data<std::int64_t>(), gy.data<T>(), r_ != Reduction::none, divisor,
                                    s.grad.data<T>(), batch, classes_, s.accumulate);
        return;
      }
#endif
      if (r_ == Reduction::none) {
        backend::cpu::nll_backward(target_.data<std::int64_t>(), gy.data<T>(), false, s.grad.data<T>(), batch, classes_,
                                   s.accumulate);
      } else {
        const T scale = gy.data<T>()[0] / (r_ == Reduction::mean ? static_cast<T>(batch) : T(1));
        backend::cpu::nll_backward(target_.data<std::int64_t>(), &scale, true, s.grad.data<T>(), batch, classes_,
                                   s.accumulate);
      }
    });
  }

 private:
  Tensor target_;
  std::int64_t classes_;
  Reduction r_;
};

}  // namespace ops::detail

/// Negative log-likelihood of class `target[n]` under log-probabilities `logp` [N, C].
/// target: int64 [N] with values in [0, C).
inline Tensor nll_loss(const Tensor& logp, const Tensor& target, Reduction reduction = Reduction::mean) {
  using namespace ops::detail;
  check_float_input("nll_loss", logp);
  check_rank("nll_loss", logp, 2, "input", "batch, classes");
  TINYNET_CHECK(TypeError, target.defined() && target.dtype() == DType::int64, "nll_loss: target must be an int64 tensor, got ",
                   target.defined() ? dtype_name(target.dtype()) : "undefined");
  TINYNET_CHECK(TypeError, target.device() == logp.device(), "nll_loss: target is on ", target.device(),
                " but the input is on ", logp.device());
  TINYNET_CHECK(ShapeError, target.shape() == Shape{logp.size(0)}, "nll_loss: target has shape ", target.shape(),
                    ", expected [", logp.size(0), "] for input of shape ", logp.shape());
  const std::int64_t batch = logp.size(0), classes = logp.size(1);
  TINYNET_CHECK(ValueError, batch > 0 || reduction != Reduction::mean, "nll_loss: mean over an empty batch");
  Tensor per_sample = new_output(Shape{batch}, logp);
  Tensor out = reduction == Reduction::none ? per_sample : new_output(Shape{}, logp);
#if defined(TINYNET_WITH_CUDA)
  // On the device the kernel checks the targets (see backend/cuda/softmax.hpp): reading
  // them here would stall the stream.
  if (logp.device().is_cuda()) {
    dispatch_floating(logp.dtype(), "nll_loss", [&]<typename T>() {
      backend::cuda::nll_forward(logp.data<T>(), target.data<std::int64_t>(), per_sample.data<T>(),
                                 reduction == Reduction::none ? nullptr : out.data<T>(),
                                 reduction == Reduction::mean ? static_cast<double>(batch) : 1.0, batch, classes);
    });
    if (autograd::needs_grad(logp))
      autograd::record(out, std::make_shared<NllLossNode>(target, classes, reduction), {&logp});
    return out;
  }
#endif
  const std::int64_t* t = target.data<std::int64_t>();
  for (std::int64_t i = 0; i < batch; ++i)
    TINYNET_CHECK(IndexError, t[i] >= 0 && t[i] < classes, "nll_loss: target ", t[i], " at position ", i,
                      " is out of range for ", classes, " classes");
  dispatch_floating(logp.dtype(), "nll_loss", [&]<typename T>() {
    backend::cpu::nll_forward(logp.data<T>(), t, per_sample.data<T>(), batch, classes);
    if (reduction != Reduction::none) {
      double acc = 0;
      for (std::int64_t i = 0; i < batch; ++i) acc += static_cast<double>(per_sample.data<T>()[i]);
      out.data<T>()[0] = static_cast<T>(reduction == Reduction::mean ? acc / static_cast<double>(batch) : acc);
    }
  });
  if (autograd::needs_grad(logp))
    autograd::record(out, std::make_shared<NllLossNode>(target, classes, reduction), {&logp});
  return out;
}

/// nll_loss(log_softmax(logits, 1), target).
inline Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction = Reduction::mean) {
  return nll_loss(log_softmax(logits, 1), target, reduction);
}

}  // namespace tinynet
