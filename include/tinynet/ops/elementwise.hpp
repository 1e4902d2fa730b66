#pragma once
/// \file
/// Elementwise ops with broadcasting (add, sub, mul, div, maximum, minimum), scalar ops,
/// unary activations (neg, relu, leaky_relu, gelu, silu, sigmoid, tanh, exp, log, pow) and
/// abs, sqrt, clamp.

#include <cmath>
#include <limits>
#include <optional>
#include <string_view>

#include "tinynet/core/detail/tensor.hpp"
#include "tinynet/ops/cast.hpp"

namespace tinynet {

/// The numpy-style broadcast of two shapes; ShapeError naming both when they do not fit.
TINYNET_OP Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

/// a + b, broadcasting.
TINYNET_OP Tensor add(const Tensor& a, const Tensor& b);

/// a - b, broadcasting.
TINYNET_OP Tensor sub(const Tensor& a, const Tensor& b);

/// a * b elementwise, broadcasting.
TINYNET_OP Tensor mul(const Tensor& a, const Tensor& b);

/// a / b elementwise, broadcasting.
TINYNET_OP Tensor div(const Tensor& a, const Tensor& b);

/// The larger of a and b elementwise, broadcasting (NaN if either is); a tie sends half the
/// gradient to each.
TINYNET_OP Tensor maximum(const Tensor& a, const Tensor& b);

/// The smaller of a and b elementwise, as maximum.
TINYNET_OP Tensor minimum(const Tensor& a, const Tensor& b);
TINYNET_OP Tensor neg(const Tensor& x);

/// max(x, 0)
TINYNET_OP Tensor relu(const Tensor& x);

/// relu(a + b) in one op (PyTorch's internal `_add_relu`): a residual connection's sum and
/// the ReLU after it, without a pass of the ReLU's own (Residual absorbs the ReLU after it
/// through it). The same values and gradients as the two ops; operands of different shapes,
/// or a bfloat16 one (beside a bfloat16 or a float32 one, promoted as add promotes), run as
/// those two ops.
TINYNET_OP Tensor add_relu(const Tensor& a, const Tensor& b);

/// 1 / (1 + e^-x)
TINYNET_OP Tensor sigmoid(const Tensor& x);

/// x where x > 0, negative_slope * x elsewhere (PyTorch's F.leaky_relu).
TINYNET_OP Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);

/// x * sigmoid(x) (also called swish).
TINYNET_OP Tensor silu(const Tensor& x);

/// x * P(X <= x), X standard normal: approximate = "none" computes it through erf, "tanh"
/// through PyTorch's tanh approximation. Requires: approximate is "none" or "tanh".
TINYNET_OP Tensor gelu(const Tensor& x, std::string_view approximate = "none");
TINYNET_OP Tensor tanh(const Tensor& x);
TINYNET_OP Tensor exp(const Tensor& x);
TINYNET_OP Tensor log(const Tensor& x);

/// |x|; its gradient is sign(x), 0 at 0.
TINYNET_OP Tensor abs(const Tensor& x);

/// The square root; its gradient 1 / (2 sqrt(x)) is infinite at 0.
TINYNET_OP Tensor sqrt(const Tensor& x);

/// x clamped to [min, max] (to max where min > max; NaN stays NaN); either bound may be
/// omitted, not both. The gradient passes where min <= x <= max, as PyTorch's.
TINYNET_OP Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max);

/// clamp(x, min, none): max(x, min).
TINYNET_OP Tensor clamp_min(const Tensor& x, double min);

/// clamp(x, none, max): min(x, max).
TINYNET_OP Tensor clamp_max(const Tensor& x, double max);

/// x^p elementwise.
TINYNET_OP Tensor pow(const Tensor& x, double p);
TINYNET_OP Tensor add(const Tensor& x, double s);
TINYNET_OP Tensor mul(const Tensor& x, double s);
TINYNET_OP Tensor operator+(const Tensor& a, const Tensor& b);
TINYNET_OP Tensor operator-(const Tensor& a, const Tensor& b);
TINYNET_OP Tensor operator*(const Tensor& a, const Tensor& b);
TINYNET_OP Tensor operator/(const Tensor& a, const Tensor& b);
TINYNET_OP Tensor operator-(const Tensor& x);
TINYNET_OP Tensor operator+(const Tensor& x, double s);
TINYNET_OP Tensor operator+(double s, const Tensor& x);
TINYNET_OP Tensor operator-(const Tensor& x, double s);
TINYNET_OP Tensor operator-(double s, const Tensor& x);
TINYNET_OP Tensor operator*(const Tensor& x, double s);
TINYNET_OP Tensor operator*(double s, const Tensor& x);
TINYNET_OP Tensor operator/(const Tensor& x, double s);

}  // namespace tinynet

#if !defined(TINYNET_OPS_DECLARED_ONLY)  // the bodies: core/config.hpp, TINYNET_OP

#include "tinynet/backend/cpu/elementwise.hpp"
#include "tinynet/backend/cuda/elementwise.hpp"  // empty in builds without CUDA
#include "tinynet/backend/elementwise.hpp"
#include "tinynet/ops/common.hpp"

namespace tinynet {

TINYNET_OP Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const int r = std::max(a.rank(), b.rank());
  Shape out;
  for (int i = 0; i < r; ++i) {
    const int da = a.rank() - r + i, db = b.rank() - r + i;
    const std::int64_t ea = da >= 0 ? a[da] : 1, eb = db >= 0 ? b[db] : 1;
    TINYNET_CHECK(ShapeError, ea == eb || ea == 1 || eb == 1, op, ": shapes ", a, " and ", b,
                  " cannot be broadcast together (dim ", i, ": ", ea, " vs ", eb, ")");
    out.push_back(ea == 1 ? eb : ea);
  }
  return out;
}

namespace ops::detail {

using backend::Binary;

inline const char* binary_name(Binary op) {
  constexpr const char* names[] = {"add", "sub", "mul", "div", "maximum", "minimum"};
  return names[static_cast<int>(op)];
}

/// out = f(a, b) over the broadcast shape `os`, with backend `be` (U: T, or bool).
template <typename B, typename T, typename U, typename F>
void broadcast_or_zip(B be, const T* a, const Shape& as, const T* b, const Shape& bs, U* out, const Shape& os, F f) {
  if (as == bs)
    zip_map(be, a, b, out, os.numel(), false, f);
  else
    broadcast_map(be, a, as, b, bs, out, os, f);
}

// y = a op b;  dL/da = sum_to(dy * dy/da, a.shape), likewise for b. Saves a and b where
// the partials need them; add's partials are 1 (and sub's for a): its gradients are dy
// summed to each input's shape, a copy where the shapes are equal (a residual connection).
class BinaryNode final : public autograd::Node {
 public:
  BinaryNode(Binary op, const Tensor& a, const Tensor& b, Shape out)
      : op_(op),
        a_(op == Binary::add ? Tensor() : a),
        b_(op == Binary::add ? Tensor() : b),
        a_shape_(a.shape()),
        b_shape_(b.shape()),
        out_(out) {}
  const char* name() const override { return binary_name(op_); }
  void release() override { a_ = b_ = Tensor(); }

  void backward(const Tensor& gy) override {
    for (int i = 0; i < 2; ++i) {
      if (!needs_input_grad(static_cast<std::size_t>(i))) continue;
      auto slot = input_grad(static_cast<std::size_t>(i));
      const Shape& shape = i == 0 ? a_shape_ : b_shape_;
      if (op_ == Binary::add || (op_ == Binary::sub && i == 0)) {
        dispatch(gy, name(), [&]<typename T>(auto be) {
          sum_to(be, gy.data<T>(), out_, slot.grad.data<T>(), shape, slot.accumulate);
        });
        continue;
      }
      Tensor full = new_output(out_, gy);
      dispatch(gy, name(), [&]<typename T>(auto be) {
        T* f = full.data<T>();
        broadcast_or_zip(be, a_.data<T>(), a_shape_, b_.data<T>(), b_shape_, f, out_, backend::BinaryPartial{op_, i});
        zip_map(be, f, gy.data<T>(), f, full.numel(), false, backend::Times{});
        sum_to(be, f, out_, slot.grad.data<T>(), shape, slot.accumulate);
      });
    }
  }

 private:
  Binary op_;
  Tensor a_, b_;
  Shape a_shape_, b_shape_;
  Shape out_;
};

inline Tensor binary(Binary op, const Tensor& a, const Tensor& b) {
  // bfloat16 operands compute in float32: two of them give bfloat16 (rounded once), one
  // beside a float32 or float64 tensor gives that type (PyTorch's type promotion).
  if (a.defined() && b.defined() && (a.dtype() == DType::bfloat16 || b.dtype() == DType::bfloat16)) {
    if (a.dtype() == b.dtype()) return cast(binary(op, cast(a, DType::float32), cast(b, DType::float32)), a.dtype());
    if (is_floating(b.dtype())) return binary(op, cast(a, b.dtype()), b);
    if (is_floating(a.dtype())) return binary(op, a, cast(b, a.dtype()));
  }
  const char* name = binary_name(op);
  check_float_input(name, a, "first operand");
  check_float_input(name, b, "second operand");
  check_same_kind(name, a, b, "second operand");
  const Shape os = broadcast_shapes(a.shape(), b.shape(), name);
  Tensor out = new_output(os, a);
  dispatch(a, name, [&]<typename T>(auto be) {
    broadcast_or_zip(be, a.data<T>(), a.shape(), b.data<T>(), b.shape(), out.data<T>(), os, backend::BinaryApply{op});
  });
  if (autograd::any_needs_grad(a, b)) autograd::record(out, std::make_shared<BinaryNode>(op, a, b, os), {&a, &b});
  return out;
}

// y = f(x);  dL/dx = dL/dy f'(x, y), written through the saved x and/or y
// (backend/elementwise.hpp holds each op's f and f').
template <typename Op>
class UnaryNode final : public autograd::Node {
 public:
  UnaryNode(Op op, Tensor x, Tensor y) : op_(op), x_(std::move(x)), y_(std::move(y)) {}
  const char* name() const override { return Op::kName; }
  void release() override { x_ = y_ = Tensor(); }

  void backward(const Tensor& gy) override {
    const autograd::GradSlot slot = input_grad(0);
    dispatch_with_bf16(gy, name(), [&]<typename T>(auto be) {
      for_each_index(be, gy.numel(),
                     backend::UnaryBackward<Op, T>{op_, data_or_null<T>(x_), data_or_null<T>(y_), gy.data<T>(),
                                                   slot.grad.data<T>(), slot.accumulate});
    });
  }

 private:
  Op op_;
  Tensor x_, y_;
};

// y = relu(a + b), a and b of one shape: each operand's gradient is gy where y > 0.
class AddReluNode final : public autograd::Node {
 public:
  explicit AddReluNode(Tensor y) : y_(std::move(y)) {}
  const char* name() const override { return "add_relu"; }
  void release() override { y_ = Tensor(); }

  void backward(const Tensor& gy) override {
    autograd::GradSlot sa, sb;  // both in one pass over y and gy
    if (needs_input_grad(0)) sa = input_grad(0);
    if (needs_input_grad(1)) sb = input_grad(1);
    dispatch(gy, name(), [&]<typename T>(auto be) {
      for_each_index(be, gy.numel(),
                     backend::AddReluBackward<T>{y_.data<T>(), gy.data<T>(), sa.template data_or_null<T>(),
                                                 sb.template data_or_null<T>(), sa.accumulate, sb.accumulate});
    });
  }

 private:
  Tensor y_;
};

template <typename Op>
Tensor unary(const Tensor& x, Op op = {}) {
  check_activation_input(Op::kName, x);
  Tensor y = new_output(x.shape(), x);
  dispatch_with_bf16(x, Op::kName, [&]<typename T>(auto be) {
    for_each_index(be, x.numel(), backend::UnaryForward<Op, T>{op, x.data<T>(), y.data<T>()});
  });
  if (autograd::needs_grad(x))
    autograd::record(
        y, std::make_shared<UnaryNode<Op>>(op, Op::kSavesX ? x : Tensor(), Op::kSavesY ? y.detach() : Tensor()), {&x});
  return y;
}

}  // namespace ops::detail

TINYNET_OP Tensor add(const Tensor& a, const Tensor& b) { return ops::detail::binary(ops::detail::Binary::add, a, b); }

TINYNET_OP Tensor sub(const Tensor& a, const Tensor& b) { return ops::detail::binary(ops::detail::Binary::sub, a, b); }

TINYNET_OP Tensor mul(const Tensor& a, const Tensor& b) { return ops::detail::binary(ops::detail::Binary::mul, a, b); }

TINYNET_OP Tensor div(const Tensor& a, const Tensor& b) { return ops::detail::binary(ops::detail::Binary::div, a, b); }

TINYNET_OP Tensor maximum(const Tensor& a, const Tensor& b) {
  return ops::detail::binary(ops::detail::Binary::maximum, a, b);
}

TINYNET_OP Tensor minimum(const Tensor& a, const Tensor& b) {
  return ops::detail::binary(ops::detail::Binary::minimum, a, b);
}

TINYNET_OP Tensor neg(const Tensor& x) { return ops::detail::unary<backend::Neg>(x); }

TINYNET_OP Tensor relu(const Tensor& x) { return ops::detail::unary<backend::Relu>(x); }

TINYNET_OP Tensor add_relu(const Tensor& a, const Tensor& b) {
  using namespace ops::detail;
  check_activation_input("add_relu", a, "first operand");
  check_activation_input("add_relu", b, "second operand");
  // A bfloat16 operand computes in float32 (binary()'s promotion), and operands of
  // different shapes broadcast: both as the two ops.
  if (a.dtype() == DType::bfloat16 || b.dtype() == DType::bfloat16 || a.shape() != b.shape()) return relu(add(a, b));
  check_same_kind("add_relu", a, b, "second operand");
  Tensor y = new_output(a.shape(), a);
  dispatch(a, "add_relu", [&]<typename T>(auto be) {
    for_each_index(be, y.numel(), backend::AddReluForward<T>{a.data<T>(), b.data<T>(), y.data<T>()});
  });
  if (autograd::any_needs_grad(a, b)) autograd::record(y, std::make_shared<AddReluNode>(y.detach()), {&a, &b});
  return y;
}

TINYNET_OP Tensor sigmoid(const Tensor& x) { return ops::detail::unary<backend::Sigmoid>(x); }

TINYNET_OP Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return ops::detail::unary(x, backend::LeakyRelu{negative_slope});
}

TINYNET_OP Tensor silu(const Tensor& x) { return ops::detail::unary<backend::Silu>(x); }

TINYNET_OP Tensor gelu(const Tensor& x, std::string_view approximate) {
  TINYNET_CHECK(ValueError, approximate == "none" || approximate == "tanh",
                "gelu: approximate must be 'none' or 'tanh', got '", approximate, "'");
  return ops::detail::unary(x, backend::Gelu{approximate == "tanh"});
}

TINYNET_OP Tensor tanh(const Tensor& x) { return ops::detail::unary<backend::Tanh>(x); }

TINYNET_OP Tensor exp(const Tensor& x) { return ops::detail::unary<backend::Exp>(x); }

TINYNET_OP Tensor log(const Tensor& x) { return ops::detail::unary<backend::Log>(x); }

TINYNET_OP Tensor abs(const Tensor& x) { return ops::detail::unary<backend::Abs>(x); }

TINYNET_OP Tensor sqrt(const Tensor& x) { return ops::detail::unary<backend::Sqrt>(x); }

TINYNET_OP Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max) {
  TINYNET_CHECK(ValueError, min || max, "clamp: at least one of min and max must be given");
  return ops::detail::unary(x, backend::Clamp{min.value_or(-std::numeric_limits<double>::infinity()),
                                              max.value_or(std::numeric_limits<double>::infinity())});
}

TINYNET_OP Tensor clamp_min(const Tensor& x, double min) { return clamp(x, min, std::nullopt); }

TINYNET_OP Tensor clamp_max(const Tensor& x, double max) { return clamp(x, std::nullopt, max); }

TINYNET_OP Tensor pow(const Tensor& x, double p) { return ops::detail::unary(x, backend::PowScalar{p}); }

TINYNET_OP Tensor add(const Tensor& x, double s) { return ops::detail::unary(x, backend::AddScalar{s}); }

TINYNET_OP Tensor mul(const Tensor& x, double s) { return ops::detail::unary(x, backend::MulScalar{s}); }

TINYNET_OP Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }

TINYNET_OP Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }

TINYNET_OP Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }

TINYNET_OP Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }

TINYNET_OP Tensor operator-(const Tensor& x) { return neg(x); }

TINYNET_OP Tensor operator+(const Tensor& x, double s) { return add(x, s); }

TINYNET_OP Tensor operator+(double s, const Tensor& x) { return add(x, s); }

TINYNET_OP Tensor operator-(const Tensor& x, double s) { return add(x, -s); }

TINYNET_OP Tensor operator-(double s, const Tensor& x) { return add(neg(x), s); }

TINYNET_OP Tensor operator*(const Tensor& x, double s) { return mul(x, s); }

TINYNET_OP Tensor operator*(double s, const Tensor& x) { return mul(x, s); }

TINYNET_OP Tensor operator/(const Tensor& x, double s) { return mul(x, 1.0 / s); }

}  // namespace tinynet

#endif  // !TINYNET_OPS_DECLARED_ONLY
