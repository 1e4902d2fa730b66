#pragma once
/// \file
/// cast: a dtype conversion recorded on the tape, between float32, float64 and bfloat16
/// (Tensor::to(DType) copies without recording). Its gradient is converted back to the
/// input's dtype, as PyTorch's `x.to(dtype)` does. Also how the ops without bfloat16
/// kernels take bfloat16 tensors: through float32 (in_float32).

#include "tinynet/core/detail/tensor.hpp"

namespace tinynet {

/// x converted to `dtype` (float32, float64 or bfloat16; to bfloat16 rounds to nearest,
/// ties to even), recorded so that the gradient flows back converted to x's dtype. Returns
/// x itself when it already has that dtype.
TINYNET_OP Tensor cast(const Tensor& x, DType dtype);

}  // namespace tinynet

#if !defined(TINYNET_OPS_DECLARED_ONLY)  // the bodies: core/config.hpp, TINYNET_OP

#include "tinynet/amp/autocast.hpp"
#include "tinynet/backend/cpu/elementwise.hpp"
#include "tinynet/backend/cuda/elementwise.hpp"  // empty in builds without CUDA
#include "tinynet/ops/common.hpp"

namespace tinynet {

namespace ops::detail {

// y = x in another dtype;  dL/dx = dL/dy in x's dtype.
class CastNode final : public autograd::Node {
 public:
  const char* name() const override { return "cast"; }
  void backward(const Tensor& gy) override {
    auto slot = input_grad(0);
    if (!slot.accumulate) {
      slot.grad.copy_(gy);  // converts
      return;
    }
    const Tensor g = gy.to(slot.grad.dtype());
    dispatch_with_bf16(
        g, name(), [&]<typename T>(auto be) { copy_or_add(be, g.data<T>(), slot.grad.data<T>(), g.numel(), true); });
  }
};

}  // namespace ops::detail

TINYNET_OP Tensor cast(const Tensor& x, DType dtype) {
  using namespace ops::detail;
  check_activation_input("cast", x);
  TINYNET_CHECK(TypeError, is_floating(dtype) || dtype == DType::bfloat16,
                "cast: target dtype must be float32, float64 or bfloat16, got ", dtype);
  if (x.dtype() == dtype) return x;
  Tensor y = x.to(dtype);
  if (autograd::needs_grad(x)) autograd::record(y, std::make_shared<CastNode>(), {&x});
  return y;
}

namespace ops::detail {

/// Whether x is a bfloat16 activation that conv2d, linear and matmul take: under autocast
/// (outside it they refuse bfloat16, their message naming autocast as the way). Its values
/// are bfloat16 already, so the products are those of its float32 copy, and the result is
/// rounded to bfloat16, as PyTorch's autocast returns it.
inline bool bf16_activation(const Tensor& x) {
  return x.defined() && x.dtype() == DType::bfloat16 && is_autocast_enabled(x.device().type);
}

/// For the ops that compute in float32 only (reductions, softmax, log_softmax, the losses,
/// batch_norm): f(x), or, for a bfloat16 x, f of x cast to float32, the result cast back to
/// bfloat16 (rounded once, as PyTorch's bfloat16 kernels round it). Under autocast their
/// result stays float32 (PyTorch keeps only the losses so: docs/autocast.md).
template <typename F>
Tensor in_float32(const Tensor& x, F&& f) {
  if (!x.defined() || x.dtype() != DType::bfloat16) return f(x);
  Tensor y = f(cast(x, DType::float32));
  return is_autocast_enabled(x.device().type) ? y : cast(y, DType::bfloat16);
}

}  // namespace ops::detail

namespace ops::detail {

/// `t` in `dtype`: recorded (cast) for the floating dtypes, a plain copy for the others.
inline Tensor promoted(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  return is_floating(t.dtype()) || t.dtype() == DType::bfloat16 ? cast(t, dtype) : t.to(dtype);
}

}  // namespace ops::detail

}  // namespace tinynet

#endif  // !TINYNET_OPS_DECLARED_ONLY
