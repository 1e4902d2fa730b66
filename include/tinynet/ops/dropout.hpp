#pragma once
/// \file
/// dropout (elements) and dropout2d (whole channels), scaled by 1/(1-p) in training.

#include "tinynet/core/detail/tensor.hpp"
#include "tinynet/core/random.hpp"

namespace tinynet {

/// Zeroes each element with probability p and scales the rest by 1/(1-p) when
/// `training`; the identity otherwise. The mask comes from `gen`.
TINYNET_OP Tensor dropout(const Tensor& x, double p = 0.5, bool training = true, Generator& gen = default_generator());

/// Zeroes whole channels of an [N, C, ...] input with probability p (scaled by 1/(1-p)).
TINYNET_OP Tensor dropout2d(const Tensor& x, double p = 0.5, bool training = true,
                            Generator& gen = default_generator());

}  // namespace tinynet

#if !defined(TINYNET_OPS_DECLARED_ONLY)  // the bodies: core/config.hpp, TINYNET_OP

#include "tinynet/backend/cpu/dropout.hpp"
#include "tinynet/backend/cuda/dropout.hpp"  // empty in builds without CUDA
#include "tinynet/ops/common.hpp"

namespace tinynet {

namespace ops::detail {

// y = x * m, m = keep / (1-p);  dL/dx = dL/dy * m.  Saves the mask.
class DropoutNode final : public autograd::Node {
 public:
  DropoutNode(Tensor mask, std::int64_t inner, const char* name) : mask_(std::move(mask)), inner_(inner), name_(name) {}
  const char* name() const override { return name_; }
  void release() override { mask_ = Tensor(); }
  void backward(const Tensor& gy) override {
    auto s = input_grad(0);
    dispatch_with_bf16(gy, name(), [&]<typename T>(auto be) {
      apply_mask(be, gy.data<T>(), mask_.data<compute_t<T>>(), s.grad.data<T>(), mask_.numel(), inner_, s.accumulate);
    });
  }

 private:
  Tensor mask_;
  std::int64_t inner_;
  const char* name_;
};

inline Tensor masked_dropout(const char* op, const Tensor& x, double p, bool training, std::int64_t units,
                             Generator& gen) {
  check_activation_input(op, x);
  TINYNET_CHECK(ValueError, p >= 0.0 && p <= 1.0, op, ": probability must be in [0, 1], got ", p);
  if (!training || p == 0.0) return x;
  const std::int64_t inner = units ? x.numel() / units : 1;
  // A bfloat16 input's mask is float32 (1/(1-p) unrounded); the output is bfloat16.
  const DType mask_dtype = x.dtype() == DType::bfloat16 ? DType::float32 : x.dtype();
  Tensor mask(Shape{units}, {mask_dtype, x.device(), false});
  Tensor y = new_output(x.shape(), x);
  const RandomStream rs = gen.reserve(static_cast<std::uint64_t>(units));
  dispatch_with_bf16(x, op, [&]<typename T>(auto be) {
    dropout_mask(be, rs, mask.data<compute_t<T>>(), units, p);
    apply_mask(be, x.data<T>(), mask.data<compute_t<T>>(), y.data<T>(), units, inner, false);
  });
  if (autograd::needs_grad(x)) autograd::record(y, std::make_shared<DropoutNode>(mask, inner, op), {&x});
  return y;
}

}  // namespace ops::detail

TINYNET_OP Tensor dropout(const Tensor& x, double p, bool training, Generator& gen) {
  return ops::detail::masked_dropout("dropout", x, p, training, x.defined() ? x.numel() : 0, gen);
}

TINYNET_OP Tensor dropout2d(const Tensor& x, double p, bool training, Generator& gen) {
  TINYNET_CHECK(ShapeError, !x.defined() || x.dim() == 3 || x.dim() == 4,
                "dropout2d: expected input of rank 3 or 4 (N, C, H[, W]), got shape ",
                x.defined() ? x.shape().str() : "undefined");
  return ops::detail::masked_dropout("dropout2d", x, p, training, x.defined() ? x.size(0) * x.size(1) : 0, gen);
}

}  // namespace tinynet

#endif  // !TINYNET_OPS_DECLARED_ONLY
