#pragma once
/// \file
/// Conv2d<Out, K, Stride, Pad, Options...>: 2-d convolution layer, weight
/// [Out, C / groups, K, K], bias [Out] unless an option is nn::no_bias; the other options
/// are nn::dilation<D> and nn::groups<G> (nn/conv_options.hpp).

#include "tinynet/nn/activation.hpp"
#include "tinynet/nn/conv_options.hpp"
#include "tinynet/nn/init.hpp"
#include "tinynet/nn/module.hpp"
#include "tinynet/nn/sample.hpp"
#include "tinynet/ops/conv2d.hpp"

namespace tinynet::nn {

template <std::int64_t Out, std::int64_t K, std::int64_t Stride = 1, std::int64_t Pad = 0, auto... Options>
class Conv2d : public Module<Conv2d<Out, K, Stride, Pad, Options...>> {
  using options = detail::ConvOptions<Options...>;
  static_assert(Out > 0, "Conv2d<Out, K, ...>: Out (output channels) must be positive");
  static_assert(K > 0, "Conv2d<Out, K, ...>: K (kernel size) must be positive");
  static_assert(Stride > 0, "Conv2d<Out, K, Stride, Pad>: Stride must be positive");
  static_assert(Pad >= 0, "Conv2d<Out, K, Stride, Pad>: Pad must not be negative");
  static_assert(options::dilation > 0, "Conv2d: nn::dilation<D> must be positive");
  static_assert(options::groups > 0, "Conv2d: nn::groups<G> must be positive");
  static_assert(Out % options::groups == 0, "Conv2d<Out, ...>: Out must be divisible by nn::groups<G>");

 public:
  static constexpr std::int64_t kernel_size = K, stride = Stride, padding = Pad, dilation = options::dilation,
                                groups = options::groups;
  static constexpr Bias bias_option = options::bias;

  /// Compile-time shape rule, used by Sequential.
  template <class In>
  struct shape {
    static_assert(detail::always_false<In>,
                  "Conv2d: expects a [channels, height, width] input; the input shape is the Sample<...> "
                  "in the instantiation lines around this error");
  };
  template <std::int64_t C, std::int64_t H, std::int64_t W>
  struct shape<Sample<C, H, W>> {
    static constexpr std::int64_t span = dilation * (K - 1) + 1;  // the dilated kernel's extent
    static constexpr bool fits = span <= H + 2 * Pad && span <= W + 2 * Pad;
    static_assert(fits,
                  "Conv2d: the kernel is larger than the (padded) input (with nn::dilation<D>, it spans D * (K - 1) "
                  "+ 1); the layer index, the layer and the input Sample<C, H, W> are in the 'CheckedLayer<index, "
                  "layer, input>' lines around this error");
    static_assert(C % groups == 0,
                  "Conv2d: the input channels C are not divisible by nn::groups<G>; the input Sample<C, H, W> "
                  "is in the 'CheckedLayer<index, layer, input>' lines around this error");
    using output =
        Sample<Out, fits ? (H + 2 * Pad - span) / Stride + 1 : 1, fits ? (W + 2 * Pad - span) / Stride + 1 : 1>;
    static constexpr std::int64_t parameters = Out * (C / groups) * K * K + (bias_option == Bias::learned ? Out : 0);
  };

  /// A layer taking `in_channels` input channels (divisible by groups, a ValueError
  /// otherwise). `bias` must agree with the options (a ValueError otherwise): the template
  /// arguments decide, so that parameter counts are right.
  explicit Conv2d(std::int64_t in_channels, bool bias = bias_option == Bias::learned)
      : weight_(empty(Shape{Out, group_in(in_channels), K, K})),
        bias_(detail::checked_bias(bias, bias_option, "Conv2d", "Conv2d<Out, K, Stride, Pad, nn::no_bias>")
                  ? empty(Shape{Out})
                  : Tensor()) {
    init::default_layer_init_(weight_, bias_, weight_.size(1) * K * K);
    weight_.requires_grad_();
    if (bias_.defined()) bias_.requires_grad_();
  }
  /// Built by Sequential from the input sample shape [C, H, W].
  explicit Conv2d(SampleDims in) : Conv2d(in[0]) {}

  Tensor forward(const Tensor& x) { return conv2d(x, weight_, bias_, Stride, Pad, dilation, groups); }
  /// relu(forward(x)) as one fused op (conv2d_relu): a Conv2d absorbs the ReLU after it
  /// (Sequential calls this for that pair).
  Tensor forward_with(const ReLU&, const Tensor& x) {
    return conv2d_relu(x, weight_, bias_, Stride, Pad, dilation, groups);
  }

  template <class V>
  void visit(V&& v) {
    v("weight", weight_, TensorKind::parameter);
    if (bias_.defined()) v("bias", bias_, TensorKind::parameter);
  }

  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }

 private:
  static std::int64_t group_in(std::int64_t in_channels) {
    TINYNET_CHECK(ValueError, detail::positive(in_channels, "Conv2d", "in_channels") % groups == 0,
                  "Conv2d: in_channels = ", in_channels, " is not divisible by groups = ", groups);
    return in_channels / groups;
  }

  Tensor weight_, bias_;
};

}  // namespace tinynet::nn
