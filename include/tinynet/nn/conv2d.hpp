#pragma once
/// \file
/// Conv2d<Out, K, Stride, Pad, B>: 2-d convolution layer, weight [Out, C, K, K], bias [Out]
/// unless B is nn::no_bias.

#include "tinynet/nn/activation.hpp"
#include "tinynet/nn/bias.hpp"
#include "tinynet/nn/init.hpp"
#include "tinynet/nn/module.hpp"
#include "tinynet/nn/sample.hpp"
#include "tinynet/ops/conv2d.hpp"

namespace tinynet::nn {

template <std::int64_t Out, std::int64_t K, std::int64_t Stride = 1, std::int64_t Pad = 0, Bias B = Bias::learned>
class Conv2d : public Module<Conv2d<Out, K, Stride, Pad, B>> {
  static_assert(Out > 0, "Conv2d<Out, K, ...>: Out (output channels) must be positive");
  static_assert(K > 0, "Conv2d<Out, K, ...>: K (kernel size) must be positive");
  static_assert(Stride > 0, "Conv2d<Out, K, Stride, Pad>: Stride must be positive");
  static_assert(Pad >= 0, "Conv2d<Out, K, Stride, Pad>: Pad must not be negative");

 public:
  /// Compile-time shape rule, used by Sequential.
  template <class In>
  struct shape {
    static_assert(detail::always_false<In>,
                  "Conv2d: expects a [channels, height, width] input; the input shape is the Sample<...> "
                  "in the instantiation lines around this error");
  };
  template <std::int64_t C, std::int64_t H, std::int64_t W>
  struct shape<Sample<C, H, W>> {
    static constexpr bool fits = K <= H + 2 * Pad && K <= W + 2 * Pad;
    static_assert(fits,
                  "Conv2d: the kernel is larger than the (padded) input; the layer index, the layer and the "
                  "input Sample<C, H, W> are in the 'CheckedLayer<index, layer, input>' lines around this error");
    using output = Sample<Out, fits ? (H + 2 * Pad - K) / Stride + 1 : 1, fits ? (W + 2 * Pad - K) / Stride + 1 : 1>;
    static constexpr std::int64_t parameters = Out * C * K * K + (B == Bias::learned ? Out : 0);
  };

  /// A layer taking `in_channels` input channels. `bias` must agree with B (a ValueError
  /// otherwise): the template argument decides, so that parameter counts are right.
  explicit Conv2d(std::int64_t in_channels, bool bias = B == Bias::learned)
      : weight_(empty(Shape{Out, detail::positive(in_channels, "Conv2d", "in_channels"), K, K})),
        bias_(detail::checked_bias(bias, B, "Conv2d", "Conv2d<Out, K, Stride, Pad, nn::no_bias>") ? empty(Shape{Out})
                                                                                                  : Tensor()) {
    init::default_layer_init_(weight_, bias_, in_channels * K * K);
    weight_.requires_grad_();
    if (bias_.defined()) bias_.requires_grad_();
  }
  /// Built by Sequential from the input sample shape [C, H, W].
  explicit Conv2d(SampleDims in) : Conv2d(in[0]) {}

  Tensor forward(const Tensor& x) { return conv2d(x, weight_, bias_, Stride, Pad); }
  /// relu(forward(x)) as one fused op (conv2d_relu): a Conv2d absorbs the ReLU after it
  /// (Sequential calls this for that pair).
  Tensor forward_with(const ReLU&, const Tensor& x) { return conv2d_relu(x, weight_, bias_, Stride, Pad); }

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
