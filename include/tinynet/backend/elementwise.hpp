#pragma once
/// \file
/// The per-element rules of the elementwise ops, written once for both backends: binary
/// arithmetic and its partial derivatives, and each unary op's value and derivative (the
/// activations among them, which conv2d_relu fuses into its kernels).

#include <cmath>
#include <cstdint>

#include "tinynet/core/config.hpp"
#include "tinynet/core/dtype.hpp"

namespace tinynet::backend {

enum class Binary { add, sub, mul, div, maximum, minimum };

template <typename T>
TINYNET_HOST_DEVICE T binary_apply(Binary op, T a, T b) {
  switch (op) {
    case Binary::add:
      return a + b;
    case Binary::sub:
      return a - b;
    case Binary::mul:
      return a * b;
    case Binary::div:
      return a / b;
    case Binary::maximum:  // NaN wins, as in PyTorch
      return a > b || a != a ? a : b;
    case Binary::minimum:
      return a < b || a != a ? a : b;
  }
  return T(0);
}

/// d(a op b)/da and d(a op b)/db. maximum and minimum split a tie half and half, as PyTorch.
template <typename T>
TINYNET_HOST_DEVICE T binary_partial(Binary op, int wrt, T a, T b) {
  switch (op) {
    case Binary::add:
      return T(1);
    case Binary::sub:
      return wrt == 0 ? T(1) : T(-1);
    case Binary::mul:
      return wrt == 0 ? b : a;
    case Binary::div:
      return wrt == 0 ? T(1) / b : -a / (b * b);
    case Binary::maximum: {
      const T self = wrt == 0 ? a : b, other = wrt == 0 ? b : a;
      return self > other ? T(1) : self == other ? T(0.5) : T(0);
    }
    case Binary::minimum: {
      const T self = wrt == 0 ? a : b, other = wrt == 0 ? b : a;
      return self < other ? T(1) : self == other ? T(0.5) : T(0);
    }
  }
  return T(0);
}

// The per-element math as functors, so that device kernels can call it too.
struct BinaryApply {
  Binary op;
  template <typename T>
  TINYNET_HOST_DEVICE T operator()(T a, T b) const {
    return binary_apply(op, a, b);
  }
};
struct BinaryPartial {
  Binary op;
  int wrt;
  template <typename T>
  TINYNET_HOST_DEVICE T operator()(T a, T b) const {
    return binary_partial(op, wrt, a, b);
  }
};
struct Times {
  template <typename T>
  TINYNET_HOST_DEVICE T operator()(T a, T b) const {
    return a * b;
  }
};

/// dx[i] (+)= gy[i] f'(x[i], y[i]) for a unary op, computed in compute_t<T> (float for
/// bfloat16 elements, rounded once as dx is stored).
template <typename Op, typename T>
struct UnaryBackward {
  Op op;
  const T* x;  // null when the op does not save x
  const T* y;  // null when the op does not save y
  const T* g;
  T* dx;
  bool accumulate;
  TINYNET_HOST_DEVICE void operator()(std::int64_t i) const {
    using C = compute_t<T>;
    const C d =
        op.template backward<C>(static_cast<C>(g[i]), x ? static_cast<C>(x[i]) : C(0), y ? static_cast<C>(y[i]) : C(0));
    dx[i] = T(accumulate ? static_cast<C>(dx[i]) + d : d);
  }
};

/// y[i] = f(x[i]) for a unary op, computed in compute_t<T>.
template <typename Op, typename T>
struct UnaryForward {
  Op op;
  const T* x;
  T* y;
  TINYNET_HOST_DEVICE void operator()(std::int64_t i) const {
    using C = compute_t<T>;
    y[i] = T(op.template forward<C>(static_cast<C>(x[i])));
  }
};

// Each op: y = f(x), and dL/dx from dL/dy = g written in terms of the saved x and/or y.
struct Neg {
  static constexpr const char* kName = "neg";
  static constexpr bool kSavesX = false, kSavesY = false;
  template <typename T>
  TINYNET_HOST_DEVICE T forward(T x) const {
    return -x;
  }
  template <typename T>
  TINYNET_HOST_DEVICE T backward(T g, T, T) const {
    return -g;
  }
};
struct Relu {  // dy/dx = [y > 0]
  static constexpr const char* kName = "relu";
  static constexpr bool kSavesX = false, kSavesY = true;
  template <typename T>
  TINYNET_HOST_DEVICE T forward(T x) const {
    return x > T(0) ? x : T(0);
  }
  template <typename T>
  TINYNET_HOST_DEVICE T backward(T g, T, T y) const {
    return y > T(0) ? g : T(0);
  }
};
/// y[i] = relu(a[i] + b[i]): a residual connection's sum and the ReLU after it in one
/// pass (add_relu); the gradient of each operand is Relu's through y.
template <typename T>
struct AddReluForward {
  const T* a;
  const T* b;
  T* y;
  TINYNET_HOST_DEVICE void operator()(std::int64_t i) const { y[i] = Relu{}.forward(a[i] + b[i]); }
};
/// add_relu's backward: both operands' gradients, gy where y > 0, in one pass over y and
/// gy. da or db is null where that operand needs none; each is written, or added to with
/// acc_a / acc_b.
template <typename T>
struct AddReluBackward {
  const T* y;
  const T* g;
  T* da;
  T* db;
  bool acc_a, acc_b;
  TINYNET_HOST_DEVICE void operator()(std::int64_t i) const {
    const T d = Relu{}.backward(g[i], T(0), y[i]);
    if (da) da[i] = acc_a ? T(da[i] + d) : d;
    if (db) db[i] = acc_b ? T(db[i] + d) : d;
  }
};
struct Sigmoid {  // dy/dx = y (1 - y)
  static constexpr const char* kName = "sigmoid";
  static constexpr bool kSavesX = false, kSavesY = true;
  template <typename T>
  TINYNET_HOST_DEVICE T forward(T x) const {
    return T(1) / (T(1) + std::exp(-x));
  }
  template <typename T>
  TINYNET_HOST_DEVICE T backward(T g, T, T y) const {
    return g * (y * (T(1) - y));
  }
};
struct Tanh {  // dy/dx = 1 - y^2
  static constexpr const char* kName = "tanh";
  static constexpr bool kSavesX = false, kSavesY = true;
  template <typename T>
  TINYNET_HOST_DEVICE T forward(T x) const {
    return std::tanh(x);
  }
  template <typename T>
  TINYNET_HOST_DEVICE T backward(T g, T, T y) const {
    return g * (T(1) - y * y);
  }
};
struct LeakyRelu {  // y = x > 0 ? x : slope x;  dy/dx = x > 0 ? 1 : slope
  static constexpr const char* kName = "leaky_relu";
  static constexpr bool kSavesX = true, kSavesY = false;
  double slope;
  // Written as a sum of selects: GCC keeps a product in one arm of a select (it may trap)
  // as a branch per element, 20 times slower on random signs. NaN stays NaN; x = -0 gives +0.
  template <typename T>
  TINYNET_HOST_DEVICE T forward(T x) const {
    return (x > T(0) ? x : T(0)) + (x > T(0) ? T(0) : x) * static_cast<T>(slope);
  }
  template <typename T>
  TINYNET_HOST_DEVICE T backward(T g, T x, T) const {
    return (x > T(0) ? g : T(0)) + (x > T(0) ? T(0) : g) * static_cast<T>(slope);
  }
};
struct Silu {  // y = x s(x), s the sigmoid;  dy/dx = s(x) (1 + x (1 - s(x)))
  static constexpr const char* kName = "silu";
  static constexpr bool kSavesX = true, kSavesY = false;
  template <typename T>
  TINYNET_HOST_DEVICE T forward(T x) const {
    return x / (T(1) + std::exp(-x));
  }
  template <typename T>
  TINYNET_HOST_DEVICE T backward(T g, T x, T) const {
    const T s = T(1) / (T(1) + std::exp(-x));
    return g * (s * (T(1) + x * (T(1) - s)));
  }
};
/// y = x P(X <= x) for a standard normal X: exactly through erf, or (tanh) PyTorch's
/// approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
struct Gelu {
  static constexpr const char* kName = "gelu";
  static constexpr bool kSavesX = true, kSavesY = false;
  bool tanh_approximation;
  template <typename T>
  TINYNET_HOST_DEVICE T forward(T x) const {
    if (tanh_approximation) return T(0.5) * x * (T(1) + std::tanh(inner(x)));
    return T(0.5) * x * (T(1) + std::erf(x * T(0.70710678118654752440)));
  }
  // exact: dy/dx = P(X <= x) + x pdf(x);  tanh: 0.5 (1 + t) + 0.5 x (1 - t^2) inner'(x)
  template <typename T>
  TINYNET_HOST_DEVICE T backward(T g, T x, T) const {
    if (tanh_approximation) {
      const T t = std::tanh(inner(x));
      const T inner_dx = T(0.79788456080286535588) * (T(1) + T(3 * 0.044715) * x * x);
      return g * (T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * inner_dx);
    }
    const T cdf = T(0.5) * (T(1) + std::erf(x * T(0.70710678118654752440)));
    const T pdf = T(0.39894228040143267794) * std::exp(T(-0.5) * x * x);
    return g * (cdf + x * pdf);
  }

 private:
  template <typename T>
  TINYNET_HOST_DEVICE static T inner(T x) {  // sqrt(2/pi) (x + 0.044715 x^3)
    return T(0.79788456080286535588) * (x + T(0.044715) * x * x * x);
  }
};
struct Exp {  // dy/dx = y
  static constexpr const char* kName = "exp";
  static constexpr bool kSavesX = false, kSavesY = true;
  template <typename T>
  TINYNET_HOST_DEVICE T forward(T x) const {
    return std::exp(x);
  }
  template <typename T>
  TINYNET_HOST_DEVICE T backward(T g, T, T y) const {
    return g * y;
  }
};
struct Log {  // dy/dx = 1 / x
  static constexpr const char* kName = "log";
  static constexpr bool kSavesX = true, kSavesY = false;
  template <typename T>
  TINYNET_HOST_DEVICE T forward(T x) const {
    return std::log(x);
  }
  template <typename T>
  TINYNET_HOST_DEVICE T backward(T g, T x, T) const {
    return g * (T(1) / x);
  }
};
struct AddScalar {  // y = x + s
  static constexpr const char* kName = "add_scalar";
  static constexpr bool kSavesX = false, kSavesY = false;
  double s;
  template <typename T>
  TINYNET_HOST_DEVICE T forward(T x) const {
    return x + static_cast<T>(s);
  }
  template <typename T>
  TINYNET_HOST_DEVICE T backward(T g, T, T) const {
    return g;
  }
};
struct MulScalar {  // y = x * s
  static constexpr const char* kName = "mul_scalar";
  static constexpr bool kSavesX = false, kSavesY = false;
  double s;
  template <typename T>
  TINYNET_HOST_DEVICE T forward(T x) const {
    return x * static_cast<T>(s);
  }
  template <typename T>
  TINYNET_HOST_DEVICE T backward(T g, T, T) const {
    return g * static_cast<T>(s);
  }
};
struct Abs {  // dy/dx = sign(x), 0 at 0
  static constexpr const char* kName = "abs";
  static constexpr bool kSavesX = true, kSavesY = false;
  template <typename T>
  TINYNET_HOST_DEVICE T forward(T x) const {
    return std::fabs(x);
  }
  template <typename T>
  TINYNET_HOST_DEVICE T backward(T g, T x, T) const {
    return x > T(0) ? g : x < T(0) ? -g : T(0);
  }
};
struct Sqrt {  // dy/dx = 1 / (2 y)
  static constexpr const char* kName = "sqrt";
  static constexpr bool kSavesX = false, kSavesY = true;
  template <typename T>
  TINYNET_HOST_DEVICE T forward(T x) const {
    return std::sqrt(x);
  }
  template <typename T>
  TINYNET_HOST_DEVICE T backward(T g, T, T y) const {
    return g / (T(2) * y);
  }
};
struct Clamp {  // y = min(max(x, lo), hi) (hi where lo > hi); dy/dx = [lo <= x <= hi]
  static constexpr const char* kName = "clamp";
  static constexpr bool kSavesX = true, kSavesY = false;
  double lo, hi;
  template <typename T>
  TINYNET_HOST_DEVICE T forward(T x) const {
    const T y = x < static_cast<T>(lo) ? static_cast<T>(lo) : x;  // NaN stays NaN
    return y > static_cast<T>(hi) ? static_cast<T>(hi) : y;
  }
  template <typename T>
  TINYNET_HOST_DEVICE T backward(T g, T x, T) const {
    return x >= static_cast<T>(lo) && x <= static_cast<T>(hi) ? g : T(0);
  }
};
struct PowScalar {  // y = x^p; dy/dx = p x^(p-1)
  static constexpr const char* kName = "pow";
  static constexpr bool kSavesX = true, kSavesY = false;
  double p;
  template <typename T>
  TINYNET_HOST_DEVICE T forward(T x) const {
    return std::pow(x, static_cast<T>(p));
  }
  template <typename T>
  TINYNET_HOST_DEVICE T backward(T g, T x, T) const {
    return g * (static_cast<T>(p) * std::pow(x, static_cast<T>(p - 1)));
  }
};

}  // namespace tinynet::backend
