#pragma once
/// \file
/// Helpers for the device tests: run the same function on CPU tensors and on copies on
/// cuda:0, and require the same outputs and gradients (the CPU backend is the reference,
/// itself tested against naive loops and gradchecks in tests/ops).

#include <functional>
#include <span>
#include <vector>

#include "op_testing.hpp"

namespace tinynet::testing {

inline const Device kCuda = Device::cuda(0);

/// float32 results of the device may differ from the CPU's by summation order only.
inline constexpr double kDeviceTolerance = 1e-5;

/// A host copy of `t` (for reading values).
inline Tensor host(const Tensor& t) { return t.device().is_cpu() ? t : t.to(Device::cpu()); }

/// A copy of `t` on the device, a leaf that requires grad when `t` does.
inline Tensor on_device(const Tensor& t) {
  if (!t.defined()) return t;
  Tensor d = t.detach().to(kCuda);
  if (t.requires_grad()) d.requires_grad_();
  return d;
}

/// How the weights v of the backward pass's sum(out * v) are drawn.
enum class Weights {
  normal,
  /// Uniform in [0, 1): with non-negative inputs every gradient is a sum of non-negative
  /// terms, whose relative rounding error is bounded whatever the summation order. Used
  /// for long sums (thousands of terms), where mixed signs make the relative difference
  /// between two correct orders a matter of cancellation, not of the kernels.
  positive,
};

/// Runs `fn` on `inputs` and on device copies of them; the outputs, and the gradients
/// of sum(out * v) for a fixed random v, must agree to `tol`.
inline void check_same_on_device(const std::function<Tensor(std::span<const Tensor>)>& fn,
                                 const std::vector<Tensor>& inputs, double tol = kDeviceTolerance,
                                 Weights weights = Weights::normal) {
  std::vector<Tensor> dev;
  for (const Tensor& t : inputs) {
    dev.push_back(on_device(t));
    if (t.defined() && t.requires_grad()) Tensor(t).set_grad(Tensor());  // inputs are reused across calls
  }
  const Tensor out_cpu = fn(inputs);
  const Tensor out_dev = fn(dev);
  REQUIRE(out_dev.device() == kCuda);
  REQUIRE(out_dev.shape() == out_cpu.shape());
  {
    INFO("forward");
    check_close(host(out_dev), values(out_cpu), tol);
  }
  if (!out_cpu.requires_grad()) return;
  Generator gen(99);
  const Tensor v = weights == Weights::normal ? randn(out_cpu.shape(), {.dtype = out_cpu.dtype()}, gen)
                                              : uniform(out_cpu.shape(), 0.0, 1.0, {.dtype = out_cpu.dtype()}, gen);
  out_cpu.backward(v);
  out_dev.backward(v.to(kCuda));
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    if (!inputs[k].defined() || !inputs[k].requires_grad()) continue;
    INFO("gradient of input " << k);
    REQUIRE(dev[k].grad().defined());
    REQUIRE(dev[k].grad().device() == kCuda);
    check_close(host(dev[k].grad()), values(inputs[k].grad()), tol);
  }
}

/// float32 values uniform in [lo, hi) from `seed`.
inline Tensor input32(const Shape& shape, std::uint64_t seed, bool requires_grad = true, double lo = -1.0,
                      double hi = 1.0) {
  return random_input(shape, seed, false, lo, hi).to(DType::float32).requires_grad_(requires_grad);
}

}  // namespace tinynet::testing
