#pragma once
/// \file
/// Parameter initialisation matching PyTorch's layer defaults, drawn from tinynet's
/// seeded generator.

#include <cmath>

#include "tinynet/core/creation.hpp"

namespace tinynet::nn::init {

/// Fills `t` with U(low, high) in place.
inline void uniform_(Tensor& t, double low, double high, Generator& gen = default_generator()) {
  t.copy_(uniform(t.shape(), low, high, {t.dtype()}, gen));
}

/// PyTorch's kaiming_uniform_ (leaky_relu gain with slope `a`): U(-b, b) with
/// b = sqrt(6 / ((1 + a^2) fan_in)). Layers use a = sqrt(5), i.e. b = 1 / sqrt(fan_in).
inline void kaiming_uniform_(Tensor& t, double a, std::int64_t fan_in, Generator& gen = default_generator()) {
  const double bound = std::sqrt(6.0 / ((1.0 + a * a) * static_cast<double>(fan_in)));
  uniform_(t, -bound, bound, gen);
}

/// The weight and bias of Linear and Conv2d as PyTorch initialises them:
/// weight ~ kaiming_uniform(a = sqrt(5)), bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
inline void default_layer_init_(Tensor& weight, Tensor& bias, std::int64_t fan_in,
                                Generator& gen = default_generator()) {
  kaiming_uniform_(weight, std::sqrt(5.0), fan_in, gen);
  if (bias.defined()) {
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    uniform_(bias, -bound, bound, gen);
  }
}

}  // namespace tinynet::nn::init
