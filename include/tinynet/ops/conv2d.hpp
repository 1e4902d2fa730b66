#pragma once
/// \file
/// conv2d: 2-d cross-correlation over NCHW input, with stride, padding, dilation and groups.

#include <string>

#include "tinynet/core/creation.hpp"
#include "tinynet/core/detail/tensor.hpp"
#include "tinynet/ops/cast.hpp"

namespace tinynet {

/// 2-d convolution (cross-correlation, as PyTorch's F.conv2d). x: [N, C, H, W], weight:
/// [out_channels, C / groups, kH, kW], bias: [out_channels] or undefined. Square stride,
/// zero padding and dilation; `groups` splits the channels into groups convolved apart
/// (C and out_channels divisible by it; groups = C is a depthwise convolution). Output:
/// [N, out_channels, (H + 2p - d(kH - 1) - 1)/s + 1, (W + 2p - d(kW - 1) - 1)/s + 1].
TINYNET_OP Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), int stride = 1,
                         int padding = 0, int dilation = 1, int groups = 1);

/// relu(conv2d(...)) in one op (PyTorch's fused ConvReLU2d): the same values and
/// gradients, without a pass over the output for the ReLU and one for its gradient.
/// nn::Sequential uses it for a Conv2d followed by a ReLU.
TINYNET_OP Tensor conv2d_relu(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), int stride = 1,
                              int padding = 0, int dilation = 1, int groups = 1);

}  // namespace tinynet

#if !defined(TINYNET_OPS_DECLARED_ONLY)  // the bodies: core/config.hpp, TINYNET_OP

#include "tinynet/amp/autocast.hpp"
#include "tinynet/backend/bf16_activations.hpp"
#include "tinynet/backend/cpu/conv2d.hpp"
#include "tinynet/backend/cuda/conv2d.hpp"  // empty in builds without CUDA
#include "tinynet/ops/common.hpp"

namespace tinynet {

namespace ops::detail {

/// conv2d's settings beside its tensors (PyTorch's stride, padding, dilation, groups).
struct Conv2dSettings {
  int stride = 1, padding = 0, dilation = 1, groups = 1;
};

inline void check_conv2d_settings(const Conv2dSettings& s) {
  TINYNET_CHECK(ValueError, s.stride >= 1, "conv2d: stride must be >= 1, got ", s.stride);
  TINYNET_CHECK(ValueError, s.padding >= 0, "conv2d: padding must be >= 0, got ", s.padding);
  TINYNET_CHECK(ValueError, s.dilation >= 1, "conv2d: dilation must be >= 1, got ", s.dilation);
  TINYNET_CHECK(ValueError, s.groups >= 1, "conv2d: groups must be >= 1, got ", s.groups);
}

inline backend::Conv2dGeometry conv2d_geometry(const Tensor& x, const Tensor& w, const Conv2dSettings& s) {
  check_rank("conv2d", x, 4, "input", "N, C, H, W");
  check_rank("conv2d", w, 4, "weight", "out_channels, in_channels / groups, kH, kW");
  TINYNET_CHECK(ShapeError, w.size(2) >= 1 && w.size(3) >= 1, "conv2d: weight of shape ", w.shape(),
                " has an empty kernel");
  check_conv2d_settings(s);
  TINYNET_CHECK(ShapeError, w.size(0) % s.groups == 0, "conv2d: weight of shape ", w.shape(), " has ", w.size(0),
                " output channels, not divisible by groups = ", s.groups);
  TINYNET_CHECK(ShapeError, x.size(1) == w.size(1) * s.groups, "conv2d: input has ", x.size(1), " channels (shape ",
                x.shape(), ") but weight expects ", w.size(1) * s.groups, " (shape ", w.shape(),
                s.groups > 1 ? ", groups = " + std::to_string(s.groups) : std::string(), ")");
  backend::Conv2dGeometry g{x.size(0), x.size(1), x.size(2), x.size(3), w.size(0), w.size(2),  w.size(3),  s.stride,
                            s.stride,  s.padding, s.padding, 0,         0,         s.dilation, s.dilation, s.groups};
  const std::int64_t hp = g.h + 2 * g.ph, wp = g.w + 2 * g.pw;
  const std::int64_t kh = g.dil_h * (g.kh - 1) + 1, kw = g.dil_w * (g.kw - 1) + 1;  // the dilated extent
  TINYNET_CHECK(ShapeError, kh <= hp && kw <= wp, "conv2d: kernel ", g.kh, "x", g.kw,
                s.dilation > 1 ? " with dilation " + std::to_string(s.dilation) + " spans " + std::to_string(kh) + "x" +
                                     std::to_string(kw) + ","
                               : std::string(" is"),
                " larger than the padded input ", hp, "x", wp, " (input shape ", x.shape(), ", padding ", s.padding,
                ")");
  g.oh = (hp - kh) / g.sh + 1;
  g.ow = (wp - kw) / g.sw + 1;
  return g;
}

/// Calls `f.template operator()<X>()` with X the type of conv2d's input x beside
/// activations A and parameters P: A, or P for a float32 input with bfloat16 outputs.
template <typename A, typename P, typename F>
void with_input_type(const Tensor& x, F&& f) {
  if constexpr (!std::is_same_v<A, P>) {
    if (x.dtype() != DType::bfloat16) return f.template operator()<P>();
  }
  f.template operator()<A>();
}

// y[n,o] = b[o] + sum_{c,i,j} W[o,c,i,j] x[n, G*Cg+c, s*y+d*i-p, s*x+d*j-p]  (c < Cg, G = o's group)
// dx = col2im(W^T gy);  dW = sum_n gy[n] col(x[n])^T;  db = sum_{n,y,x} gy.  Saves x and W.
// Fused with a ReLU (conv2d_relu) it also saves its output y and uses gy * [y > 0].
// The backward products are computed as the forward ones were (autocast). The output, its
// gradient and y have the activations' type A, the parameters and their gradients P, x and
// dx A or P (with_input_type): all float32 or float64, or under autocast A bfloat16 where
// the backend takes bfloat16 activations (backend/bf16_activations.hpp).
class Conv2dNode final : public autograd::Node {
 public:
  Conv2dNode(Tensor x, Tensor w, backend::Conv2dGeometry g, backend::Products products, Tensor y_relu,
             DType activations)
      : x_(std::move(x)),
        w_(std::move(w)),
        y_relu_(std::move(y_relu)),
        g_(g),
        products_(products),
        activations_(activations) {}
  const char* name() const override { return y_relu_.defined() ? "conv2d_relu" : "conv2d"; }
  void release() override { x_ = w_ = y_relu_ = Tensor(); }
  void backward(const Tensor& gy_in) override {
    const Tensor gy = gy_in.dtype() == activations_ ? gy_in : gy_in.to(activations_);
    autograd::GradSlot sx, sw, sb;
    if (needs_input_grad(0)) sx = input_grad(0);
    if (needs_input_grad(1)) sw = input_grad(1);
    if (needs_input_grad(2)) sb = input_grad(2);
    backend::dispatch_activations<backend::Conv2dBf16>(
        gy.device(), activations_, name(), [&]<typename A, typename P>(auto be) {
          Tensor scratch = empty(Shape{conv2d_backward_scratch(be, g_, y_relu_.defined(), products_)}, w_.options());
          with_input_type<A, P>(x_, [&]<typename X>() {
            conv2d_backward(be, g_, x_.data<X>(), w_.data<P>(), gy.data<A>(), sx.template data_or_null<X>(),
                            sx.accumulate, sw.template data_or_null<P>(), sw.accumulate, sb.template data_or_null<P>(),
                            sb.accumulate, scratch.data<P>(), data_or_null<A>(y_relu_), products_);
          });
        });
  }

 private:
  Tensor x_, w_, y_relu_;
  backend::Conv2dGeometry g_;
  backend::Products products_;
  DType activations_;
};

/// weight and bias of the type and device of `like` (the input, or under autocast the weight).
inline void check_conv2d_params(const char* op, const Tensor& like, const Tensor& weight, const Tensor& bias,
                                std::int64_t out_c) {
  check_float_input(op, weight, "weight");
  check_same_kind(op, like, weight, "weight");
  if (bias.defined()) {
    check_same_kind(op, like, bias, "bias");
    TINYNET_CHECK(ShapeError, bias.shape() == Shape{out_c}, op, ": bias has shape ", bias.shape(), ", expected [",
                  out_c, "]");
  }
}

/// conv2d with an output of type `activations` (x's, or under autocast bfloat16 where the
/// backend takes it), its products as `products` say.
inline Tensor conv2d_run(const char* op, const Tensor& x, const Tensor& weight, const Tensor& bias,
                         const backend::Conv2dGeometry& g, bool relu, backend::Products products, DType activations) {
  Tensor y(Shape{g.n, g.out_c, g.oh, g.ow}, {activations, x.device(), false});
  backend::dispatch_activations<backend::Conv2dBf16>(x.device(), activations, op, [&]<typename A, typename P>(auto be) {
    Tensor scratch = empty(Shape{conv2d_forward_scratch(be, g, products)}, weight.options());
    with_input_type<A, P>(x, [&]<typename X>() {
      conv2d_forward(be, g, x.data<X>(), weight.data<P>(), data_or_null<P>(bias), y.data<A>(), scratch.data<P>(), relu,
                     products);
    });
  });
  if (autograd::any_needs_grad(x, weight, bias))
    autograd::record(y, std::make_shared<Conv2dNode>(x, weight, g, products, relu ? y.detach() : Tensor(), activations),
                     {&x, &weight, &bias});
  return y;
}

/// conv2d under autocast with float32 parameters: bfloat16 products and a bfloat16 output,
/// as PyTorch's autocast returns it, for a float32 or bfloat16 input. The kernels take the
/// activations as they are where the backend takes them (backend::takes_bf16); elsewhere
/// through casts (the same values: the output is the float32 result rounded once).
inline Tensor conv2d_autocast(const char* op, const Tensor& x, const Tensor& weight, const Tensor& bias,
                              const Conv2dSettings& s, bool relu) {
  const auto g = conv2d_geometry(x, weight, s);
  check_conv2d_params(op, weight, weight, bias, g.out_c);
  TINYNET_CHECK(TypeError, weight.device() == x.device(), op, ": weight is on ", weight.device(),
                " but the input is on ", x.device());
  const backend::Products products = backend::Products::bfloat16;
  const bool output = backend::takes_bf16(x.device(), backend::Conv2dBf16{g, false});
  const bool input = output && backend::takes_bf16(x.device(), backend::Conv2dBf16{g, true});
  const Tensor in = x.dtype() == DType::bfloat16 && !input ? cast(x, DType::float32) : x;
  if (!output) return cast(conv2d_run(op, in, weight, bias, g, relu, products, DType::float32), DType::bfloat16);
  return conv2d_run(op, in, weight, bias, g, relu, products, DType::bfloat16);
}

inline Tensor conv2d_impl(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dSettings& s,
                          bool relu) {
  const char* op = relu ? "conv2d_relu" : "conv2d";
  if (x.defined() && weight.defined() && weight.dtype() == DType::float32 &&
      (x.dtype() == DType::float32 || bf16_activation(x)) && is_autocast_enabled(x.device().type))
    return conv2d_autocast(op, x, weight, bias, s, relu);
  check_float_input(op, x);
  const auto g = conv2d_geometry(x, weight, s);
  check_conv2d_params(op, x, weight, bias, g.out_c);
  return conv2d_run(op, x, weight, bias, g, relu, autocast_products(x.device(), x.dtype()), x.dtype());
}

}  // namespace ops::detail

TINYNET_OP Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, int stride, int padding,
                         int dilation, int groups) {
  return ops::detail::conv2d_impl(x, weight, bias, {stride, padding, dilation, groups}, false);
}

TINYNET_OP Tensor conv2d_relu(const Tensor& x, const Tensor& weight, const Tensor& bias, int stride, int padding,
                              int dilation, int groups) {
  return ops::detail::conv2d_impl(x, weight, bias, {stride, padding, dilation, groups}, true);
}

}  // namespace tinynet

#endif  // !TINYNET_OPS_DECLARED_ONLY
