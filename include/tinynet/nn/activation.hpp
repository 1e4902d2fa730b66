#pragma once
/// \file
/// Parameter-free elementwise layers: ReLU, Sigmoid, Tanh, and LogSoftmax / Softmax over
/// the feature dim.

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

class Sigmoid : public Module<Sigmoid>, public SameShape {
 public:
  Tensor forward(const Tensor& x) { return sigmoid(x); }
};

class Tanh : public Module<Tanh>, public SameShape {
 public:
  Tensor forward(const Tensor& x) { return tanh(x); }
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
