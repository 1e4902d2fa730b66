#pragma once
/// \file
/// Adadelta (Zeiler 2012) with weight decay, as in PyTorch 1.13.

#include "tinynet/backend/cpu/optimizers.hpp"
#include "tinynet/backend/cuda/optimizers.hpp"  // empty in builds without CUDA
#include "tinynet/optim/optimizer.hpp"

namespace tinynet::optim {

/// Adadelta hyper-parameters (PyTorch's defaults).
struct AdadeltaOptions {
  static constexpr const char* kOptimizer = "Adadelta";
  double lr = 1.0;
  double rho = 0.9;
  double eps = 1e-6;
  double weight_decay = 0;
  /// Ascend the objective instead of descending it.
  bool maximize = false;

  /// ValueError naming the option: lr < 0, rho outside [0, 1], eps < 0, weight_decay < 0.
  void validate() const {
    detail::check_option(lr >= 0, kOptimizer, "lr", lr, "must be >= 0");
    detail::check_option(rho >= 0 && rho <= 1, kOptimizer, "rho", rho, "must be in [0, 1]");
    detail::check_option(eps >= 0, kOptimizer, "eps", eps, "must be >= 0");
    detail::check_option(weight_decay >= 0, kOptimizer, "weight_decay", weight_decay, "must be >= 0");
  }

  template <typename Self, typename F>
  static void fields(Self& o, F&& f) {
    f("lr", o.lr);
    f("rho", o.rho);
    f("eps", o.eps);
    f("weight_decay", o.weight_decay);
    f("maximize", o.maximize);
  }
};

/// Adadelta. Per parameter, with g its gradient (+ weight_decay p):
///   v = rho v + (1 - rho) g²;  d = sqrt(u + eps) / sqrt(v + eps) g;
///   u = rho u + (1 - rho) d²;  p -= lr d.
/// State: "step", "square_avg" (v), "acc_delta" (u), zeros at the first step.
class Adadelta final : public OptimizerBase<AdadeltaOptions> {
 public:
  explicit Adadelta(std::vector<Tensor> params, AdadeltaOptions options = {})
      : OptimizerBase({{std::move(params), options}}) {}
  explicit Adadelta(std::vector<ParamGroup<AdadeltaOptions>> groups) : OptimizerBase(std::move(groups)) {}

 protected:
  std::span<const char* const> state_names() const override { return kNames; }
  bool counts_steps() const override { return true; }
  bool buffer_required(std::size_t, const AdadeltaOptions&) const override { return true; }

  void update(Tensor& p, const Tensor& grad, ParamState& s, const AdadeltaOptions& o) override {
    Tensor& square_avg = buffer(s, 0, p, true);
    Tensor& acc_delta = buffer(s, 1, p, true);
    ++s.step;
    const backend::AdadeltaArgs args{
        .lr = o.lr, .rho = o.rho, .eps = o.eps, .weight_decay = o.weight_decay, .maximize = o.maximize};
    backend::dispatch(p.device(), p.dtype(), "Adadelta", [&]<typename T>(auto be) {
      adadelta_update(be, p.data<T>(), grad.data<T>(), square_avg.data<T>(), acc_delta.data<T>(), p.numel(), args);
    });
  }

 private:
  static constexpr std::array<const char*, 2> kNames{"square_avg", "acc_delta"};
};

}  // namespace tinynet::optim
