#pragma once
/// \file
/// Parameter-free elementwise layers: ReLU, LeakyReLU, GELU, SiLU, Sigmoid, Tanh, Identity,
/// and LogSoftmax / Softmax over the feature dim.

#include <string>

#include "tinynet/nn/module.hpp"
#include "tinynet/nn/sample.hpp"
#include "tinynet/ops/elementwise.hpp"
#include "tinynet/ops/softmax.hpp"

namespace tinynet::nn {

/// Shape rule of layers whose output has their input's shape and that own no parameters.
struct SameShape {
  template <class S>
  struct shape {
    using output = S;
    static constexpr std::int64_t parameters = 0;
  };
  template <class V>
  void visit(V&&) {}
};

class ReLU : public Module<ReLU>, public SameShape {
 public:
  Tensor forward(const Tensor& x) { return relu(x); }
};

/// leaky_relu(x, negative_slope); Sequential<..., LeakyReLU, ...> net(LeakyReLU(0.2)) sets the slope.
class LeakyReLU : public Module<LeakyReLU>, public SameShape {
 public:
  explicit LeakyReLU(double negative_slope = 0.01) : negative_slope_(negative_slope) {}
  double negative_slope() const { return negative_slope_; }
  Tensor forward(const Tensor& x) { return leaky_relu(x, negative_slope_); }

 private:
  double negative_slope_;
};

/// gelu(x, approximate): "none" (exact, through erf) or "tanh"; any other value is a
/// ValueError when the layer is made.
class GELU : public Module<GELU>, public SameShape {
 public:
  explicit GELU(std::string approximate = "none") : approximate_(std::move(approximate)) {
    TINYNET_CHECK(ValueError, approximate_ == "none" || approximate_ == "tanh",
                  "GELU: approximate must be 'none' or 'tanh', got '", approximate_, "'");
  }
  const std::string& approximate() const { return approximate_; }
  Tensor forward(const Tensor& x) { return gelu(x, approximate_); }

 private:
  std::string approximate_;
};

/// silu(x) = x * sigmoid(x).
class SiLU : public Module<SiLU>, public SameShape {
 public:
  Tensor forward(const Tensor& x) { return silu(x); }
};

class Sigmoid : public Module<Sigmoid>, public SameShape {
 public:
  Tensor forward(const Tensor& x) { return sigmoid(x); }
};

class Tanh : public Module<Tanh>, public SameShape {
 public:
  Tensor forward(const Tensor& x) { return tanh(x); }
};

/// Returns its input unchanged (the same tensor, as PyTorch's nn.Identity): a placeholder
/// where a network's layer is optional.
class Identity : public Module<Identity>, public SameShape {
 public:
  Tensor forward(const Tensor& x) { return x; }
};

/// log_softmax over dim 1 (the classes of a [N, classes] batch).
class LogSoftmax : public Module<LogSoftmax>, public SameShape {
 public:
  Tensor forward(const Tensor& x) { return log_softmax(x, 1); }
};

/// softmax over dim 1.
class Softmax : public Module<Softmax>, public SameShape {
 public:
  Tensor forward(const Tensor& x) { return softmax(x, 1); }
};

}  // namespace tinynet::nn
