#pragma once
/// \file
/// The optimizers' per-element update rules, shared by both backends, in the order PyTorch
/// (1.13, single-tensor path) applies its tensor ops, so results agree with it to rounding.
/// Hyper-parameters arrive as doubles; derived constants (1 - beta, lr / bias correction)
/// are formed in double and rounded to T once, as PyTorch does with its Python scalars.

#include <cmath>
#include <cstdint>

#include "tinynet/core/config.hpp"

namespace tinynet::backend {

/// SGD hyper-parameters of one update.
struct SgdArgs {
  double lr = 0;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
  bool maximize = false;
  /// The momentum buffer is new: it takes the gradient as it is (no dampening), as in PyTorch.
  bool init_buffer = false;
};

/// The SGD update of element i: g = ±grad + wd p;  buf = g (new) or momentum buf +
/// (1 - dampening) g;  g = g + momentum buf (nesterov) or buf;  p -= lr g.
template <typename T>
struct SgdRule {
  T* param;
  const T* grad;
  T* buf;  // null when momentum is 0
  T lr, wd, mu, keep;
  bool use_wd, use_mu, init_buffer, nesterov, maximize;

  SgdRule(T* p, const T* g, T* b, const SgdArgs& a)
      : param(p),
        grad(g),
        buf(b),
        lr(static_cast<T>(a.lr)),
        wd(static_cast<T>(a.weight_decay)),
        mu(static_cast<T>(a.momentum)),
        keep(static_cast<T>(1.0 - a.dampening)),
        use_wd(a.weight_decay != 0),
        use_mu(a.momentum != 0),
        init_buffer(a.init_buffer),
        nesterov(a.nesterov),
        maximize(a.maximize) {}

  /// The update on values: V is T, or a vector of floats (cpu::avx512::Vec, ...) in the CPU's vector loop.
  /// `g` is the gradient's value, used as scratch; `b` the momentum buffer's value (unused
  /// when momentum is 0). Vectors go by reference: by value they would change calling
  /// convention between the per-level kernels and this shared code.
  template <typename V>
  TINYNET_VECTOR_INLINE TINYNET_HOST_DEVICE void update(V& p, V& g, V& b) const {
    if (maximize) g = -g;
    if (use_wd) g = g + wd * p;
    if (use_mu) {
      b = init_buffer ? g : mu * b + keep * g;
      g = nesterov ? g + mu * b : b;
    }
    p = p - lr * g;
  }

  TINYNET_HOST_DEVICE void operator()(std::int64_t i) const {
    T p = param[i], g = grad[i], b = use_mu ? buf[i] : T(0);
    update(p, g, b);
    param[i] = p;
    if (use_mu) buf[i] = b;
  }
};

/// Adadelta hyper-parameters of one update.
struct AdadeltaArgs {
  double lr = 0;
  double rho = 0;
  double eps = 0;
  double weight_decay = 0;
  bool maximize = false;
};

/// The Adadelta update of element i: g = ±grad + wd p;  v = rho v + (1 - rho) g²;
/// d = sqrt(u + eps) / sqrt(v + eps) g;  u = rho u + (1 - rho) d²;  p -= lr d.
/// (v: square_avg, u: acc_delta)
template <typename T>
struct AdadeltaRule {
  T* param;
  const T* grad;
  T* square_avg;
  T* acc_delta;
  T lr, rho, eps, wd, one_minus_rho;
  bool use_wd, maximize;

  AdadeltaRule(T* p, const T* g, T* v, T* u, const AdadeltaArgs& a)
      : param(p),
        grad(g),
        square_avg(v),
        acc_delta(u),
        lr(static_cast<T>(a.lr)),
        rho(static_cast<T>(a.rho)),
        eps(static_cast<T>(a.eps)),
        wd(static_cast<T>(a.weight_decay)),
        one_minus_rho(static_cast<T>(1.0 - a.rho)),
        use_wd(a.weight_decay != 0),
        maximize(a.maximize) {}

  /// The update on values, as SgdRule's (`g` used as scratch).
  template <typename V>
  TINYNET_VECTOR_INLINE TINYNET_HOST_DEVICE void update(V& p, V& g, V& v, V& u) const {
    using std::sqrt;
    if (maximize) g = -g;
    if (use_wd) g = g + wd * p;
    v = rho * v + one_minus_rho * g * g;
    const V rms = sqrt(v + eps);
    const V delta = sqrt(u + eps) / rms * g;
    u = rho * u + one_minus_rho * delta * delta;
    p = p - lr * delta;
  }

  TINYNET_HOST_DEVICE void operator()(std::int64_t i) const {
    T p = param[i], g = grad[i], v = square_avg[i], u = acc_delta[i];
    update(p, g, v, u);
    param[i] = p;
    square_avg[i] = v;
    acc_delta[i] = u;
  }
};

/// Adam / AdamW hyper-parameters of one update, bias corrections included.
struct AdamArgs {
  double lr = 0;
  double beta1 = 0;
  double beta2 = 0;
  double eps = 0;
  double weight_decay = 0;
  bool amsgrad = false;
  bool maximize = false;
  /// AdamW: decay the parameter by (1 - lr wd) instead of adding wd p to the gradient.
  bool decoupled = false;
  /// The parameter's step count after this update (1 on the first).
  std::int64_t step = 1;
};

/// The Adam / AdamW update of element i: g = ±grad (+ wd p for Adam; p *= 1 - lr wd for
/// AdamW);  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g²;  v̂ = max(v̂, v) (amsgrad) or v;
/// p -= lr / (1 - b1^t) · m / (sqrt(v̂) / sqrt(1 - b2^t) + eps).
template <typename T>
struct AdamRule {
  T* param;
  const T* grad;
  T* exp_avg;
  T* exp_avg_sq;
  T* max_exp_avg_sq;  // null unless amsgrad
  T b1, b2, one_minus_b1, one_minus_b2, step_size, bc2_sqrt, eps, wd, decay;
  bool coupled_wd, decoupled, amsgrad, maximize;

  AdamRule(T* p, const T* g, T* m, T* v, T* vmax, const AdamArgs& a)
      : param(p),
        grad(g),
        exp_avg(m),
        exp_avg_sq(v),
        max_exp_avg_sq(vmax),
        b1(static_cast<T>(a.beta1)),
        b2(static_cast<T>(a.beta2)),
        one_minus_b1(static_cast<T>(1.0 - a.beta1)),
        one_minus_b2(static_cast<T>(1.0 - a.beta2)),
        step_size(static_cast<T>(a.lr / (1.0 - std::pow(a.beta1, static_cast<double>(a.step))))),
        bc2_sqrt(static_cast<T>(std::sqrt(1.0 - std::pow(a.beta2, static_cast<double>(a.step))))),
        eps(static_cast<T>(a.eps)),
        wd(static_cast<T>(a.weight_decay)),
        decay(static_cast<T>(1.0 - a.lr * a.weight_decay)),
        coupled_wd(!a.decoupled && a.weight_decay != 0),
        decoupled(a.decoupled),
        amsgrad(a.amsgrad),
        maximize(a.maximize) {}

  TINYNET_HOST_DEVICE void operator()(std::int64_t i) const {
    T g = maximize ? -grad[i] : grad[i];
    if (decoupled)
      param[i] *= decay;
    else if (coupled_wd)
      g += wd * param[i];
    exp_avg[i] = b1 * exp_avg[i] + one_minus_b1 * g;
    exp_avg_sq[i] = b2 * exp_avg_sq[i] + one_minus_b2 * g * g;
    T v = exp_avg_sq[i];
    if (amsgrad) v = max_exp_avg_sq[i] = max_exp_avg_sq[i] > v ? max_exp_avg_sq[i] : v;
    const T denom = std::sqrt(v) / bc2_sqrt + eps;
    param[i] -= step_size * (exp_avg[i] / denom);
  }
};

}  // namespace tinynet::backend
