#pragma once
/// \file
/// gradcheck: the tape's gradient against central finite differences, in float64.

#include <cmath>
#include <functional>
#include <span>
#include <vector>

#include "tinynet/autograd/engine.hpp"
#include "tinynet/core/creation.hpp"

namespace tinynet {

/// Outcome of a gradient check: the worst error over every checked input element.
struct GradcheckResult {
  double max_rel_error = 0;  ///< max |analytic - numeric| / max(1, |analytic|, |numeric|)
  std::size_t worst_input = 0;
  std::int64_t worst_index = -1;
  double analytic = 0, numeric = 0;
  std::int64_t checked = 0;  ///< input elements compared
};

/// Checks the gradient of `fn` with respect to every input that requires grad.
///
/// With v a fixed random upstream gradient, L(x) = sum(v * fn(x)); the tape's dL/dx is
/// compared with (L(x + eps e_i) - L(x - eps e_i)) / 2 eps for every element i of every
/// such input. Errors are relative to the gradient's magnitude, and absolute where it
/// is below 1 (so that entries that are zero in exact arithmetic still count).
/// Requires float64 inputs on the CPU; undefined inputs (an omitted optional argument,
/// such as a bias) are passed to `fn` as they are.
inline GradcheckResult gradcheck(const std::function<Tensor(std::span<const Tensor>)>& fn, std::vector<Tensor> inputs,
                                 double eps = 1e-6, std::uint64_t seed = 1234) {
  for (const Tensor& t : inputs)
    TINYNET_CHECK(TypeError, !t.defined() || !t.requires_grad() || t.dtype() == DType::float64,
                  "gradcheck: inputs that require grad must be float64, got ", t.dtype());
  Tensor probe = fn(inputs);
  Generator gen(seed);
  const Tensor v = randn(probe.shape(), {DType::float64}, gen);

  // Inputs may live on a CUDA device: values are read and perturbed through host copies.
  const auto to_host = [](const Tensor& t) { return t.device().is_cpu() ? t : t.to(Device::cpu()); };
  auto weighted_sum = [&](const Tensor& device_out) {
    const Tensor out = to_host(device_out);
    double acc = 0;
    for (std::int64_t i = 0; i < out.numel(); ++i) acc += v.data<double>()[i] * out.data<double>()[i];
    return acc;
  };

  for (Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) t.set_grad(Tensor());
  fn(inputs).backward(v.to(probe.device()));

  GradcheckResult r;
  NoGradGuard no_grad;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    Tensor& x = inputs[k];
    if (!x.defined() || !x.requires_grad()) continue;
    TINYNET_CHECK(Error, x.grad().defined(), "gradcheck: input ", k, " requires grad but backward gave it none");
    const Tensor g = to_host(x.grad());
    const Tensor host_x = x.device().is_cpu() ? x : x.to(Device::cpu());
    double* p = host_x.data<double>();
    const auto set = [&](std::int64_t i, double value) {
      p[i] = value;
      if (!x.device().is_cpu()) Tensor(x).copy_(host_x);
    };
    for (std::int64_t i = 0; i < x.numel(); ++i) {
      const double orig = p[i];
      set(i, orig + eps);
      const double up = weighted_sum(fn(inputs));
      set(i, orig - eps);
      const double down = weighted_sum(fn(inputs));
      set(i, orig);
      const double numeric = (up - down) / (2 * eps);
      const double analytic = g.data<double>()[i];
      const double err = std::abs(analytic - numeric) / std::max({1.0, std::abs(analytic), std::abs(numeric)});
      ++r.checked;
      if (err > r.max_rel_error || r.worst_index < 0) {
        r = {err, k, i, analytic, numeric, r.checked};
      }
    }
  }
  return r;
}

}  // namespace tinynet
