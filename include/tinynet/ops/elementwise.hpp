#pragma once
/// \file
/// Elementwise ops with broadcasting (add, sub, mul, div), scalar ops, and unary
/// activations (neg, relu, sigmoid, tanh, exp, log, pow).

#include <cmath>

#include "tinynet/backend/cpu/elementwise.hpp"
#include "tinynet/ops/common.hpp"

#if defined(TINYNET_WITH_CUDA)
#include "tinynet/backend/cuda/elementwise.hpp"
#endif

namespace tinynet {

/// The numpy-style broadcast of two shapes; ShapeError naming both when they do not fit.
inline Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
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

enum class Binary { add, sub, mul, div };

inline const char* binary_name(Binary op) {
  constexpr const char* names[] = {"add", "sub", "mul", "div"};
  return names[static_cast<int>(op)];
}

template <typename T>
TINYNET_HOST_DEVICE T binary_apply(Binary op, T a, T b) {
  switch (op) {
    case Binary::add: return a + b;
    case Binary::sub: return a - b;
    case Binary::mul: return a * b;
    case Binary::div: return a / b;
  }
  return T(0);
}

/// d(a op b)/da and d(a op b)/db.
template <typename T>
TINYNET_HOST_DEVICE T binary_partial(Binary op, int wrt, T a, T b) {
  switch (op) {
    case Binary::add: return T(1);
    case Binary::sub: return wrt == 0 ? T(1) : T(-1);
    case Binary::mul: return wrt == 0 ? b : a;
    case Binary::div: return wrt == 0 ? T(1) / b : -a / (b * b);
  }
  return T(0);
}

// The per-element math as functors, so that device kernels can call it too.
struct BinaryApply {
  Binary op;
  template <typename T>
  TINYNET_HOST_DEVICE T operator()(T a, T b) const { return binary_apply(op, a, b); }
};
struct BinaryPartial {
  Binary op;
  int wrt;
  template <typename T>
  TINYNET_HOST_DEVICE T operator()(T a, T b) const { return binary_partial(op, wrt, a, b); }
};
struct Times {
  template <typename T>
  TINYNET_HOST_DEVICE T operator()(T a, T b) const { return a * b; }
};

/// out = f(a, b) over the broadcast shape `os`, on the operands' device.
template <typename T, typename F>
void broadcast_or_zip(const Tensor& on, const T* a, const Shape& as, const T* b, const Shape& bs, T* out,
                      const Shape& os, F f) {
#if defined(TINYNET_WITH_CUDA)
  if (on.device().is_cuda()) {
    if (as == bs) backend::cuda::zip_map(a, b, out, os.numel(), false, f);
    else backend::cuda::broadcast_map(a, as, b, bs, out, os, f);
    return;
  }
#endif
  (void)on;
  if (as == bs) backend::cpu::zip_map(a, b, out, os.numel(), false, f);
  else backend::cpu::broadcast_map(a, as, b, bs, out, os, f);
}

class BinaryNode final : public autograd::Node {
 public:
  BinaryNode(Binary op, Tensor a, Tensor b, Shape out) : op_(op), a_(std::move(a)), b_(std::move(b)), out_(out) {}
  const char* name() const override { return binary_name(op_); }
  void release() override { a_ = b_ = Tensor(); }

  // y = a op b;  dL/da = sum_to(dy * dy/da, a.shape), likewise for b.
  void backward(const Tensor& gy) override {
    for (int i = 0; i < 2; ++i) {
      if (!needs_input_grad(static_cast<std::size_t>(i))) continue;
      auto slot = input_grad(static_cast<std::size_t>(i));
      const Tensor& self = i == 0 ? a_ : b_;
      dispatch_floating(gy.dtype(), name(), [&]<typename T>() {
        Tensor full = new_output(out_, gy);
        T* f = full.data<T>();
        broadcast_or_zip(gy, a_.data<T>(), a_.shape(), b_.data<T>(), b_.shape(), f, out_, BinaryPartial{op_, i});
#if defined(TINYNET_WITH_CUDA)
        if (gy.device().is_cuda()) {
          backend::cuda::zip_map(f, gy.data<T>(), f, full.numel(), false, Times{});
          backend::cuda::sum_to(f, out_, slot.grad.data<T>(), self.shape(), slot.accumulate);
          return;
        }
#endif
        backend::cpu::zip_map(f, gy.data<T>(), f, full.numel(), false, Times{});
        backend::cpu::sum_to(f, out_, slot.grad.data<T>(), self.shape(), slot.accumulate);
      });
    }
  }

 private:
  Binary op_;
  Tensor a_, b_;
  Shape out_;
};

inline Tensor binary(Binary op, const Tensor& a, const Tensor& b) {
  const char* name = binary_name(op);
  check_float_input(name, a, "first operand");
  check_float_input(name, b, "second operand");
  check_same_kind(name, a, b, "second operand");
  const Shape os = broadcast_shapes(a.shape(), b.shape(), name);
  Tensor out = new_output(os, a);
  dispatch_floating(a.dtype(), name, [&]<typename T>() {
    broadcast_or_zip(a, a.data<T>(), a.shape(), b.data<T>(), b.shape(), out.data<T>(), os, BinaryApply{op});
  });
  if (autograd::any_needs_grad(a, b))
    autograd::record(out, std::make_shared<BinaryNode>(op, a, b, os), {&a, &b});
  return out;
}

/// dx[i] (+)= gy[i] * f'(x[i], y[i]) for a unary op.
template <typename Op, typename T>
struct UnaryBackward {
  Op op;
  const T* x;  // null when the op does not save x
  const T* y;  // null when the op does not save y
  const T* g;
  T* dx;
  bool accumulate;
  TINYNET_HOST_DEVICE void operator()(std::int64_t i) const {
    const T d = g[i] * op.template derivative<T>(x ? x[i] : T(0), y ? y[i] : T(0));
    dx[i] = accumulate ? dx[i] + d : d;
  }
};

/// y[i] = f(x[i]) for a unary op.
template <typename Op, typename T>
struct UnaryForward {
  Op op;
  const T* x;
  T* y;
  TINYNET_HOST_DEVICE void operator()(std::int64_t i) const { y[i] = op.template forward<T>(x[i]); }
};

/// A unary op y = f(x) whose derivative is expressed through x and/or y.
template <typename Op>
class UnaryNode final : public autograd::Node {
 public:
  UnaryNode(Op op, Tensor x, Tensor y) : op_(op), x_(std::move(x)), y_(std::move(y)) {}
  const char* name() const override { return Op::kName; }
  void release() override { x_ = y_ = Tensor(); }

  void backward(const Tensor& gy) override {
    const autograd::GradSlot slot = input_grad(0);
    dispatch_floating(gy.dtype(), name(), [&]<typename T>() {
      for_each_index(gy, gy.numel(),
                     UnaryBackward<Op, T>{op_, x_.defined() ? x_.data<T>() : nullptr,
                                          y_.defined() ? y_.data<T>() : nullptr, gy.data<T>(), slot.grad.data<T>(),
                                          slot.accumulate});
    });
  }

 private:
  Op op_;
  Tensor x_, y_;
};

template <typename Op>
Tensor unary(const Tensor& x, Op op = {}) {
  check_float_input(Op::kName, x);
  Tensor y = new_output(x.shape(), x);
  dispatch_floating(x.dtype(), Op::kName,
                    [&]<typename T>() { for_each_index(x, x.numel(), UnaryForward<Op, T>{op, x.data<T>(), y.data<T>()}); });
  if (autograd::needs_grad(x))
    autograd::record(y, std::make_shared<UnaryNode<Op>>(op, Op::kSavesX ? x : Tensor(), Op::kSavesY ? y.detach() : Tensor()),
                     {&x});
  return y;
}

// Each op: y = f(x); dy/dx written in terms of the saved x and/or y.
struct Neg {
  static constexpr const char* kName = "neg";
  static constexpr bool kSavesX = false, kSavesY = false;
  template <typename T> TINYNET_HOST_DEVICE T forward(T x) const { return -x; }
  template <typename T> TINYNET_HOST_DEVICE T derivative(T, T) const { return T(-1); }
};
struct Relu {  // dy/dx = [y > 0]
  static constexpr const char* kName = "relu";
  static constexpr bool kSavesX = false, kSavesY = true;
  template <typename T> TINYNET_HOST_DEVICE T forward(T x) const { return x > T(0) ? x : T(0); }
  template <typename T> TINYNET_HOST_DEVICE T derivative(T, T y) const { return y > T(0) ? T(1) : T(0); }
};
struct Sigmoid {  // dy/dx = y (1 - y)
  static constexpr const char* kName = "sigmoid";
  static constexpr bool kSavesX = false, kSavesY = true;
  template <typename T> TINYNET_HOST_DEVICE T forward(T x) const { return T(1) / (T(1) + std::exp(-x)); }
  template <typename T> TINYNET_HOST_DEVICE T derivative(T, T y) const { return y * (T(1) - y); }
};
struct Tanh {  // dy/dx = 1 - y^2
  static constexpr const char* kName = "tanh";
  static constexpr bool kSavesX = false, kSavesY = true;
  template <typename T> TINYNET_HOST_DEVICE T forward(T x) const { return std::tanh(x); }
  template <typename T> TINYNET_HOST_DEVICE T derivative(T, T y) const { return T(1) - y * y; }
};
struct Exp {  // dy/dx = y
  static constexpr const char* kName = "exp";
  static constexpr bool kSavesX = false, kSavesY = true;
  template <typename T> TINYNET_HOST_DEVICE T forward(T x) const { return std::exp(x); }
  template <typename T> TINYNET_HOST_DEVICE T derivative(T, T y) const { return y; }
};
struct Log {  // dy/dx = 1 / x
  static constexpr const char* kName = "log";
  static constexpr bool kSavesX = true, kSavesY = false;
  template <typename T> TINYNET_HOST_DEVICE T forward(T x) const { return std::log(x); }
  template <typename T> TINYNET_HOST_DEVICE T derivative(T x, T) const { return T(1) / x; }
};
struct AddScalar {  // y = x + s
  static constexpr const char* kName = "add_scalar";
  static constexpr bool kSavesX = false, kSavesY = false;
  double s;
  template <typename T> TINYNET_HOST_DEVICE T forward(T x) const { return x + static_cast<T>(s); }
  template <typename T> TINYNET_HOST_DEVICE T derivative(T, T) const { return T(1); }
};
struct MulScalar {  // y = x * s
  static constexpr const char* kName = "mul_scalar";
  static constexpr bool kSavesX = false, kSavesY = false;
  double s;
  template <typename T> TINYNET_HOST_DEVICE T forward(T x) const { return x * static_cast<T>(s); }
  template <typename T> TINYNET_HOST_DEVICE T derivative(T, T) const { return static_cast<T>(s); }
};
struct PowScalar {  // y = x^p; dy/dx = p x^(p-1)
  static constexpr const char* kName = "pow";
  static constexpr bool kSavesX = true, kSavesY = false;
  double p;
  template <typename T> TINYNET_HOST_DEVICE T forward(T x) const { return std::pow(x, static_cast<T>(p)); }
  template <typename T> TINYNET_HOST_DEVICE T derivative(T x, T) const { return static_cast<T>(p) * std::pow(x, static_cast<T>(p - 1)); }
};

}  // namespace ops::detail

/// a + b, broadcasting.
inline Tensor add(const Tensor& a, const Tensor& b) { return ops::detail::binary(ops::detail::Binary::add, a, b); }
/// a - b, broadcasting.
inline Tensor sub(const Tensor& a, const Tensor& b) { return ops::detail::binary(ops::detail::Binary::sub, a, b); }
/// a * b elementwise, broadcasting.
inline Tensor mul(const Tensor& a, const Tensor& b) { return ops::detail::binary(ops::detail::Binary::mul, a, b); }
/// a / b elementwise, broadcasting.
inline Tensor div(const Tensor& a, const Tensor& b) { return ops::detail::binary(ops::detail::Binary::div, a, b); }

inline Tensor neg(const Tensor& x) { return ops::detail::unary<ops::detail::Neg>(x); }
/// max(x, 0)
inline Tensor relu(const Tensor& x) { return ops::detail::unary<ops::detail::Relu>(x); }
/// 1 / (1 + e^-x)
inline Tensor sigmoid(const Tensor& x) { return ops::detail::unary<ops::detail::Sigmoid>(x); }
inline Tensor tanh(const Tensor& x) { return ops::detail::unary<ops::detail::Tanh>(x); }
inline Tensor exp(const Tensor& x) { return ops::detail::unary<ops::detail::Exp>(x); }
inline Tensor log(const Tensor& x) { return ops::detail::unary<ops::detail::Log>(x); }
/// x^p elementwise.
inline Tensor pow(const Tensor& x, double p) { return ops::detail::unary(x, ops::detail::PowScalar{p}); }
inline Tensor add(const Tensor& x, double s) { return ops::detail::unary(x, ops::detail::AddScalar{s}); }
inline Tensor mul(const Tensor& x, double s) { return ops::detail::unary(x, ops::detail::MulScalar{s}); }

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator-(const Tensor& x) { return neg(x); }
inline Tensor operator+(const Tensor& x, double s) { return add(x, s); }
inline Tensor operator+(double s, const Tensor& x) { return add(x, s); }
inline Tensor operator-(const Tensor& x, double s) { return add(x, -s); }
inline Tensor operator-(double s, const Tensor& x) { return add(neg(x), s); }
inline Tensor operator*(const Tensor& x, double s) { return mul(x, s); }
inline Tensor operator*(double s, const Tensor& x) { return mul(x, s); }
inline Tensor operator/(const Tensor& x, double s) { return mul(x, 1.0 / s); }

}  // namespace tinynet
