#pragma once
/// \file
/// Bias: whether a Conv2d or Linear layer adds a learned bias. It is a template argument, so
/// that Sequential's compile-time parameter_count knows it: Conv2d<16, 3, 1, 1, nn::no_bias>.

#include "tinynet/core/error.hpp"

namespace tinynet::nn {

enum class Bias : bool { none = false, learned = true };

/// Conv2d<Out, K, Stride, Pad, no_bias>, Linear<Out, In, no_bias>: PyTorch's bias=False.
inline constexpr Bias no_bias = Bias::none;

namespace detail {

/// The run-time bias flag a layer was constructed with, checked against its template's Bias;
/// ValueError naming the layer and the spelling that gives the other one.
inline bool checked_bias(bool bias, Bias declared, const char* layer, const char* no_bias_form) {
  if (declared == Bias::learned)
    TINYNET_CHECK(ValueError, bias, layer, ": constructed with bias = false, but its template arguments give it a ",
                  "bias; write ", no_bias_form);
  else
    TINYNET_CHECK(ValueError, !bias, layer, ": constructed with bias = true, but its template arguments say ",
                  "nn::no_bias");
  return bias;
}

}  // namespace detail

}  // namespace tinynet::nn
