#pragma once
/// \file
/// SGD with momentum, dampening, Nesterov momentum and weight decay (PyTorch 1.13's rules).

#include <cmath>
#include <limits>

#include "tinynet/backend/cpu/optimizers.hpp"
#include "tinynet/backend/cuda/optimizers.hpp"  // empty in builds without CUDA
#include "tinynet/optim/optimizer.hpp"

namespace tinynet::optim {

/// SGD hyper-parameters: `SGD(params, {.lr = 0.1, .momentum = 0.9})`.
struct SGDOptions {
  static constexpr const char* kOptimizer = "SGD";
  /// Required (no default, as in PyTorch).
  double lr = std::numeric_limits<double>::quiet_NaN();
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
  /// Ascend the objective instead of descending it.
  bool maximize = false;

  /// ValueError naming the option: lr missing or < 0, momentum < 0, weight_decay < 0,
  /// nesterov without momentum > 0 and dampening == 0.
  void validate() const {
    TINYNET_CHECK(ValueError, !std::isnan(lr), "SGD: lr has no default; pass one, e.g. SGD(params, {.lr = 0.01})");
    detail::check_option(lr >= 0, kOptimizer, "lr", lr, "must be >= 0");
    detail::check_option(momentum >= 0, kOptimizer, "momentum", momentum, "must be >= 0");
    detail::check_option(weight_decay >= 0, kOptimizer, "weight_decay", weight_decay, "must be >= 0");
    TINYNET_CHECK(ValueError, !nesterov || (momentum > 0 && dampening == 0),
                  "SGD: nesterov requires momentum > 0 and dampening == 0 (got momentum ", momentum, ", dampening ",
                  dampening, ")");
  }

  template <typename Self, typename F>
  static void fields(Self& o, F&& f) {
    f("lr", o.lr);
    f("momentum", o.momentum);
    f("dampening", o.dampening);
    f("weight_decay", o.weight_decay);
    f("nesterov", o.nesterov);
    f("maximize", o.maximize);
  }
};

/// Stochastic gradient descent. Per parameter, with g its gradient:
///   g += weight_decay p;  buf = g on the first step, else momentum buf + (1 - dampening) g;
///   g = nesterov ? g + momentum buf : buf   (when momentum != 0);  p -= lr g.
/// State: "momentum_buffer" (only when momentum != 0).
class SGD final : public OptimizerBase<SGDOptions> {
 public:
  SGD(std::vector<Tensor> params, SGDOptions options) : OptimizerBase({{std::move(params), options}}) {}
  explicit SGD(std::vector<ParamGroup<SGDOptions>> groups) : OptimizerBase(std::move(groups)) {}

 protected:
  std::span<const char* const> state_names() const override { return kNames; }
  bool counts_steps() const override { return false; }
  bool buffer_required(std::size_t, const SGDOptions&) const override { return true; }

  void update(Tensor& p, const Tensor& grad, ParamState& s, const SGDOptions& o) override {
    const bool use_momentum = o.momentum != 0;
    const bool init = use_momentum && !s.buffers[0].defined();
    Tensor* buf = use_momentum ? &buffer(s, 0, p, false) : nullptr;
    const backend::SgdArgs args{.lr = o.lr,
                                .momentum = o.momentum,
                                .dampening = o.dampening,
                                .weight_decay = o.weight_decay,
                                .nesterov = o.nesterov,
                                .maximize = o.maximize,
                                .init_buffer = init};
    backend::dispatch(p.device(), p.dtype(), "SGD", [&]<typename T>(auto be) {
      sgd_update(be, p.data<T>(), grad.data<T>(), buf ? buf->data<T>() : nullptr, p.numel(), args);
    });
  }

 private:
  static constexpr std::array<const char*, 1> kNames{"momentum_buffer"};
};

}  // namespace tinynet::optim
