#pragma once
/// \file
/// linear (x W^T + b) and matmul.

#include "tinynet/core/detail/tensor.hpp"
#include "tinynet/ops/cast.hpp"

namespace tinynet {

/// y = x W^T + b, x: [N, in], weight: [out, in], bias: [out] or undefined.
TINYNET_OP Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

/// Matrix product of a [M, K] and b [K, N].
TINYNET_OP Tensor matmul(const Tensor& a, const Tensor& b);

}  // namespace tinynet

#if !defined(TINYNET_OPS_DECLARED_ONLY)  // the bodies: core/config.hpp, TINYNET_OP

#include "tinynet/amp/autocast.hpp"
#include "tinynet/backend/bf16_activations.hpp"
#include "tinynet/backend/cpu/linear.hpp"
#include "tinynet/backend/cuda/linear.hpp"  // empty in builds without CUDA
#include "tinynet/ops/common.hpp"

namespace tinynet {

namespace ops::detail {

// y = x W^T + b;  dx = gy W;  dW = gy^T x;  db = sum_n gy.  Saves x and W. The backward
// products are computed as the forward ones were (autocast); so for matmul. The
// activations (x, y, gy, dx) have x's type A, the parameters and their gradients P: both
// float32 or float64, or under autocast A bfloat16 and P float32 where the backend takes
// bfloat16 activations (backend/bf16_activations.hpp).
class LinearNode final : public autograd::Node {
 public:
  LinearNode(Tensor x, Tensor w, backend::Products products)
      : x_(std::move(x)), w_(std::move(w)), products_(products) {}
  const char* name() const override { return "linear"; }
  void release() override { x_ = w_ = Tensor(); }
  void backward(const Tensor& gy_in) override {
    const Tensor gy = gy_in.dtype() == x_.dtype() ? gy_in : gy_in.to(x_.dtype());
    const std::int64_t batch = x_.size(0), in = x_.size(1), out = w_.size(0);
    backend::dispatch_activations<backend::LinearBf16>(
        gy.device(), gy.dtype(), name(), [&]<typename A, typename P>(auto be) {
          if (needs_input_grad(0)) {
            auto s = input_grad(0);
            linear_backward_input(be, gy.data<A>(), w_.data<P>(), s.grad.data<A>(), batch, in, out, s.accumulate,
                                  products_);
          }
          if (needs_input_grad(1)) {
            auto s = input_grad(1);
            linear_backward_weight(be, gy.data<A>(), x_.data<A>(), s.grad.data<P>(), batch, in, out, s.accumulate,
                                   products_);
          }
          if (needs_input_grad(2)) {
            auto s = input_grad(2);
            linear_backward_bias(be, gy.data<A>(), s.grad.data<P>(), batch, out, s.accumulate);
          }
        });
  }

 private:
  Tensor x_, w_;
  backend::Products products_;
};

// y = a b;  da = gy b^T;  db = a^T gy.  Saves a and b.
class MatmulNode final : public autograd::Node {
 public:
  MatmulNode(Tensor a, Tensor b, backend::Products products)
      : a_(std::move(a)), b_(std::move(b)), products_(products) {}
  const char* name() const override { return "matmul"; }
  void release() override { a_ = b_ = Tensor(); }
  void backward(const Tensor& gy) override {
    const std::int64_t m = a_.size(0), k = a_.size(1), n = b_.size(1);
    dispatch(gy, name(), [&]<typename T>(auto be) {
      if (needs_input_grad(0)) {
        auto s = input_grad(0);
        matmul(be, gy.data<T>(), b_.data<T>(), s.grad.data<T>(), m, n, k, false, true, s.accumulate, products_);
      }
      if (needs_input_grad(1)) {
        auto s = input_grad(1);
        matmul(be, a_.data<T>(), gy.data<T>(), s.grad.data<T>(), k, m, n, true, false, s.accumulate, products_);
      }
    });
  }

 private:
  Tensor a_, b_;
  backend::Products products_;
};

/// Whether linear under autocast runs a bfloat16 input x in the kernels as it is:
/// well-formed float32 parameters on x's device, and a backend that takes bfloat16
/// activations for x's shape. Otherwise it casts, and the float32 path checks the arguments.
inline bool linear_takes_bf16(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const auto param = [&](const Tensor& t) { return t.dtype() == DType::float32 && t.device() == x.device(); };
  if (!weight.defined() || !param(weight) || x.dim() != 2 || weight.dim() != 2 || x.size(1) != weight.size(1))
    return false;
  if (bias.defined() && (!param(bias) || bias.shape() != Shape{weight.size(0)})) return false;
  return backend::takes_bf16(x.device(), backend::LinearBf16{x.size(1)});
}

}  // namespace ops::detail

TINYNET_OP Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  using namespace ops::detail;
  const bool bf16 = bf16_activation(x);
  if (bf16 && !linear_takes_bf16(x, weight, bias))
    return cast(linear(cast(x, DType::float32), weight, bias), DType::bfloat16);
  if (!bf16) {  // (linear_takes_bf16 checked a bfloat16 x's arguments)
    check_float_input("linear", x);
    check_float_input("linear", weight, "weight");
    check_same_kind("linear", x, weight, "weight");
    check_rank("linear", x, 2, "input", "batch, in_features");
    check_rank("linear", weight, 2, "weight", "out_features, in_features");
    TINYNET_CHECK(ShapeError, x.size(1) == weight.size(1), "linear: input has ", x.size(1), " features (shape ",
                  x.shape(), ") but weight expects ", weight.size(1), " (shape ", weight.shape(), ")");
    if (bias.defined()) {
      check_same_kind("linear", x, bias, "bias");
      TINYNET_CHECK(ShapeError, bias.shape() == Shape{weight.size(0)}, "linear: bias has shape ", bias.shape(),
                    ", expected [", weight.size(0), "]");
    }
  }
  const std::int64_t batch = x.size(0), in = x.size(1), out = weight.size(0);
  Tensor y = new_output(Shape{batch, out}, x);
  const backend::Products products = bf16 ? backend::Products::bfloat16 : autocast_products(x.device(), x.dtype());
  backend::dispatch_activations<backend::LinearBf16>(
      x.device(), x.dtype(), "linear", [&]<typename A, typename P>(auto be) {
        linear_forward(be, x.data<A>(), weight.data<P>(), data_or_null<P>(bias), y.data<A>(), batch, in, out, products);
      });
  if (autograd::any_needs_grad(x, weight, bias))
    autograd::record(y, std::make_shared<LinearNode>(x, weight, products), {&x, &weight, &bias});
  return y;
}

TINYNET_OP Tensor matmul(const Tensor& a, const Tensor& b) {
  using namespace ops::detail;
  if (bf16_activation(a) || bf16_activation(b)) {
    const auto f32 = [](const Tensor& t) { return t.dtype() == DType::bfloat16 ? cast(t, DType::float32) : t; };
    return cast(matmul(f32(a), f32(b)), DType::bfloat16);
  }
  check_float_input("matmul", a, "first operand");
  check_float_input("matmul", b, "second operand");
  check_same_kind("matmul", a, b, "second operand");
  check_rank("matmul", a, 2, "first operand", "M, K");
  check_rank("matmul", b, 2, "second operand", "K, N");
  TINYNET_CHECK(ShapeError, a.size(1) == b.size(0), "matmul: shapes ", a.shape(), " and ", b.shape(),
                " do not fit (inner extents ", a.size(1), " and ", b.size(0), " differ)");
  const std::int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  Tensor y = new_output(Shape{m, n}, a);
  const backend::Products products = autocast_products(a.device(), a.dtype());
  dispatch(a, "matmul", [&]<typename T>(auto be) {
    matmul(be, a.data<T>(), b.data<T>(), y.data<T>(), m, k, n, false, false, false, products);
  });
  if (autograd::any_needs_grad(a, b)) autograd::record(y, std::make_shared<MatmulNode>(a, b, products), {&a, &b});
  return y;
}

}  // namespace tinynet

#endif  // !TINYNET_OPS_DECLARED_ONLY
