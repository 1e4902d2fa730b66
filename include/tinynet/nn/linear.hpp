#pragma once
/// \file
/// Linear<Out, In, B>: y = x W^T + b, weight [Out, In], bias [Out] unless B is nn::no_bias.
/// In = 0 (the default) takes the input size from the previous layer; a non-zero In is
/// checked against it.

#include "tinynet/nn/bias.hpp"
#include "tinynet/nn/init.hpp"
#include "tinynet/nn/module.hpp"
#include "tinynet/nn/sample.hpp"
#include "tinynet/ops/linear.hpp"

namespace tinynet::nn {

template <std::int64_t Out, std::int64_t In = 0, Bias B = Bias::learned>
class Linear : public Module<Linear<Out, In, B>> {
  static_assert(Out > 0, "Linear<Out, In>: Out (output features) must be positive");
  static_assert(In >= 0, "Linear<Out, In>: In (input features) must be positive, or 0 to infer it");

 public:
  template <class S>
  struct shape {
    static_assert(S::rank == 1,
                  "Linear: expects a flat [features] input; put Flatten before it (the input Sample<...> is in "
                  "the instantiation lines around this error)");
    static_assert(S::rank != 1 || In == 0 || In == S::numel,
                  "Linear<Out, In>: In differs from the number of features the previous layer gives; the layer "
                  "index, the layer and the input Sample<features> are in the 'CheckedLayer<index, layer, input>' "
                  "lines around this error");
    using output = Sample<Out>;
    static constexpr std::int64_t parameters = Out * S::numel + (B == Bias::learned ? Out : 0);
  };

  /// A layer taking `in_features` inputs (must equal In when In is given). `bias` must agree
  /// with B (a ValueError otherwise).
  explicit Linear(std::int64_t in_features = In, bool bias = B == Bias::learned)
      : weight_(empty(Shape{Out, detail::positive(in_features, "Linear", "in_features")})),
        bias_(detail::checked_bias(bias, B, "Linear", "Linear<Out, In, nn::no_bias>") ? empty(Shape{Out}) : Tensor()) {
    TINYNET_CHECK(ValueError, In == 0 || in_features == In, "Linear<", Out, ", ", In, ">: constructed with ",
                  in_features, " input features");
    init::default_layer_init_(weight_, bias_, in_features);
    weight_.requires_grad_();
    if (bias_.defined()) bias_.requires_grad_();
  }
  /// Built by Sequential from the input sample shape [features].
  explicit Linear(SampleDims in) : Linear(in[0]) {}

  Tensor forward(const Tensor& x) { return linear(x, weight_, bias_); }

  template <class V>
  void visit(V&& v) {
    v("weight", weight_, TensorKind::parameter);
    if (bias_.defined()) v("bias", bias_, TensorKind::parameter);
  }

  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }

 private:
  Tensor weight_, bias_;
};

}  // namespace tinynet::nn
