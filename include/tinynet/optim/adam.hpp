#pragma once
/// \file
/// Adam (Kingma & Ba 2014) with L2 weight decay, and AdamW (Loshchilov & Hutter 2017) with
/// decoupled weight decay; both with AMSGrad. PyTorch 1.13's rules and defaults.

#include <array>

#include "tinynet/backend/cpu/optimizers.hpp"
#include "tinynet/backend/cuda/optimizers.hpp"  // empty in builds without CUDA
#include "tinynet/optim/optimizer.hpp"

namespace tinynet::optim {

namespace detail {

/// The options Adam and AdamW share; they differ in name and default weight_decay.
template <const char* Name, double DefaultWeightDecay>
struct AdamOptionsT {
  static constexpr const char* kOptimizer = Name;
  double lr = 1e-3;
  std::array<double, 2> betas{0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = DefaultWeightDecay;
  bool amsgrad = false;
  /// Ascend the objective instead of descending it.
  bool maximize = false;

  /// ValueError naming the option: lr < 0, eps < 0, a beta outside [0, 1), weight_decay < 0.
  void validate() const {
    check_option(lr >= 0, kOptimizer, "lr", lr, "must be >= 0");
    check_option(eps >= 0, kOptimizer, "eps", eps, "must be >= 0");
    check_option(betas[0] >= 0 && betas[0] < 1, kOptimizer, "betas[0]", betas[0], "must be in [0, 1)");
    check_option(betas[1] >= 0 && betas[1] < 1, kOptimizer, "betas[1]", betas[1], "must be in [0, 1)");
    check_option(weight_decay >= 0, kOptimizer, "weight_decay", weight_decay, "must be >= 0");
  }

  template <typename Self, typename F>
  static void fields(Self& o, F&& f) {
    f("lr", o.lr);
    f("betas", o.betas);
    f("eps", o.eps);
    f("weight_decay", o.weight_decay);
    f("amsgrad", o.amsgrad);
    f("maximize", o.maximize);
  }
};

inline constexpr char kAdamName[] = "Adam";
inline constexpr char kAdamWName[] = "AdamW";

/// Adam's update, with weight decay added to the gradient or (Decoupled) applied to p.
template <typename Options, bool Decoupled>
class AdamBase : public OptimizerBase<Options> {
 public:
  using OptimizerBase<Options>::OptimizerBase;

 protected:
  std::span<const char* const> state_names() const override { return kNames; }
  bool counts_steps() const override { return true; }
  bool buffer_required(std::size_t b, const Options& o) const override { return b < 2 || o.amsgrad; }

  void update(Tensor& p, const Tensor& grad, ParamState& s, const Options& o) override {
    Tensor& exp_avg = this->buffer(s, 0, p, true);
    Tensor& exp_avg_sq = this->buffer(s, 1, p, true);
    Tensor* max_exp_avg_sq = o.amsgrad ? &this->buffer(s, 2, p, true) : nullptr;
    ++s.step;
    const backend::AdamArgs args{.lr = o.lr,
                                 .beta1 = o.betas[0],
                                 .beta2 = o.betas[1],
                                 .eps = o.eps,
                                 .weight_decay = o.weight_decay,
                                 .amsgrad = o.amsgrad,
                                 .maximize = o.maximize,
                                 .decoupled = Decoupled,
                                 .step = s.step};
    backend::dispatch(p.device(), p.dtype(), Options::kOptimizer, [&]<typename T>(auto be) {
      adam_update(be, p.data<T>(), grad.data<T>(), exp_avg.data<T>(), exp_avg_sq.data<T>(),
                  max_exp_avg_sq ? max_exp_avg_sq->data<T>() : nullptr, p.numel(), args);
    });
  }

 private:
  static constexpr std::array<const char*, 3> kNames{"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
};

}  // namespace detail

/// Adam hyper-parameters (PyTorch's defaults): `Adam(params, {.lr = 1e-2, .amsgrad = true})`.
using AdamOptions = detail::AdamOptionsT<detail::kAdamName, 0.0>;
/// AdamW hyper-parameters (PyTorch's defaults; weight_decay 1e-2).
using AdamWOptions = detail::AdamOptionsT<detail::kAdamWName, 1e-2>;

/// Adam. Per parameter, with g its gradient (+ weight_decay p) and t its step count:
///   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g²;  v̂ = amsgrad ? max(v̂, v) : v;
///   p -= lr / (1 - b1^t) · m / (sqrt(v̂) / sqrt(1 - b2^t) + eps).
/// State: "step", "exp_avg" (m), "exp_avg_sq" (v), "max_exp_avg_sq" (v̂, amsgrad only).
class Adam final : public detail::AdamBase<AdamOptions, false> {
 public:
  explicit Adam(std::vector<Tensor> params, AdamOptions options = {}) : AdamBase({{std::move(params), options}}) {}
  explicit Adam(std::vector<ParamGroup<AdamOptions>> groups) : AdamBase(std::move(groups)) {}
};

/// AdamW: Adam whose weight decay shrinks the parameter, p *= 1 - lr weight_decay, before
/// the moment updates, instead of entering the gradient. Same state as Adam.
class AdamW final : public detail::AdamBase<AdamWOptions, true> {
 public:
  explicit AdamW(std::vector<Tensor> params, AdamWOptions options = {}) : AdamBase({{std::move(params), options}}) {}
  explicit AdamW(std::vector<ParamGroup<AdamWOptions>> groups) : AdamBase(std::move(groups)) {}
};

}  // namespace tinynet::optim
