#pragma once
/// \file
/// Gradient clipping, as PyTorch's torch.nn.utils.clip_grad_norm_: every gradient scaled
/// by one factor so that their joint norm is at most max_norm, in place (between
/// backward() and the optimizer's step()); parameters without a gradient are skipped.

#include <cmath>
#include <limits>
#include <vector>

#include "tinynet/autograd/grad_mode.hpp"
#include "tinynet/core/error.hpp"
#include "tinynet/core/tensor.hpp"
#include "tinynet/ops/elementwise.hpp"
#include "tinynet/ops/reduce.hpp"

namespace tinynet::nn::utils {

/// The norm of all the gradients taken as one vector, ‖(‖g_1‖_p, ‖g_2‖_p, ...)‖_p, each
/// Σ|g_i|^p summed in its own dtype, the rest in float64 (p = infinity: the largest
/// |element|); if it exceeds
/// max_norm, every gradient is multiplied by max_norm / (norm + 1e-6). Returns the norm
/// before clipping. `error_if_nonfinite`: a NaN or infinite norm is a ValueError instead of
/// gradients scaled by NaN. Requires norm_type > 0 (or infinity) and max_norm >= 0.
inline double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                              bool error_if_nonfinite = false) {
  TINYNET_CHECK(ValueError, norm_type > 0, "clip_grad_norm_: norm_type must be > 0 or infinity, got ", norm_type);
  TINYNET_CHECK(ValueError, max_norm >= 0, "clip_grad_norm_: max_norm must be >= 0, got ", max_norm);
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const Tensor& p : parameters)
    if (p.defined() && p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return 0.0;
  const bool inf = std::isinf(norm_type);
  double total = 0;
  for (const Tensor& g : grads) {
    if (inf) {  // the largest |element|; a NaN anywhere makes the norm NaN
      const double a = amax(abs(g)).item<double>();
      total = std::isnan(a) || std::isnan(total) ? std::numeric_limits<double>::quiet_NaN() : std::max(total, a);
      continue;
    }
    const Tensor squares = mul(g, g);  // |g|^p as (g^2)^(p/2)
    total += sum(norm_type == 2.0 ? squares : pow(squares, norm_type / 2)).item<double>();
  }
  if (!inf) total = std::pow(total, 1 / norm_type);
  TINYNET_CHECK(ValueError, !error_if_nonfinite || std::isfinite(total), "clip_grad_norm_: the total norm of order ",
                norm_type, " of the gradients is ", total, " (error_if_nonfinite)");
  const double coef = max_norm / (total + 1e-6);
  if (coef < 1 || std::isnan(coef))
    for (Tensor& g : grads) g.copy_(mul(g, coef));
  return total;
}

}  // namespace tinynet::nn::utils
