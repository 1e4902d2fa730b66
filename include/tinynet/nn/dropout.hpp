#pragma once
/// \file
/// Dropout and Dropout2d layers; active in training mode only. The probability is set
/// at construction: `Dropout{0.25}` (PyTorch's default 0.5 otherwise).

#include "tinynet/nn/activation.hpp"
#include "tinynet/ops/dropout.hpp"

namespace tinynet::nn {

class Dropout : public Module<Dropout>, public SameShape {
 public:
  explicit Dropout(double p = 0.5) : p_(p) {
    TINYNET_CHECK(ValueError, p >= 0.0 && p <= 1.0, "Dropout: probability must be in [0, 1], got ", p);
  }
  Tensor forward(const Tensor& x) { return dropout(x, p_, this->is_training()); }
  double p() const { return p_; }

 private:
  double p_;
};

/// Zeroes whole channels of an [N, C, H, W] input.
class Dropout2d : public Module<Dropout2d>, public SameShape {
 public:
  explicit Dropout2d(double p = 0.5) : p_(p) {
    TINYNET_CHECK(ValueError, p >= 0.0 && p <= 1.0, "Dropout2d: probability must be in [0, 1], got ", p);
  }
  Tensor forward(const Tensor& x) { return dropout2d(x, p_, this->is_training()); }
  double p() const { return p_; }

 private:
  double p_;
};

}  // namespace tinynet::nn
