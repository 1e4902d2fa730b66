#pragma once
/// \file
/// conv2d: 2-d cross-correlation over NCHW input, groups = 1.

#include "tinynet/amp/autocast.hpp"
#include "tinynet/backend/cpu/conv2d.hpp"
#include "tinynet/backend/cuda/conv2d.hpp"  // empty in builds without CUDA
#include "tinynet/core/creation.hpp"
#include "tinynet/ops/cast.hpp"
#include "tinynet/ops/common.hpp"

namespace tinynet {

namespace ops::detail {

inline backend::Conv2dGeometry conv2d_geometry(const Tensor& x, const Tensor& w, int stride, int padding) {
  check_rank("conv2d", x, 4, "input", "N, C, H, W");
  check_rank("conv2d", w, 4, "weight", "out_channels, in_channels, kH, kW");
  TINYNET_CHECK(ShapeError, w.size(2) >= 1 && w.size(3) >= 1, "conv2d: weight of shape ", w.shape(),
                " has an empty kernel");
  TINYNET_CHECK(ValueError, stride >= 1, "conv2d: stride must be >= 1, got ", stride);
  TINYNET_CHECK(ValueError, padding >= 0, "conv2d: padding must be >= 0, got ", padding);
  TINYNET_CHECK(ShapeError, x.size(1) == w.size(1), "conv2d: input has ", x.size(1), " channels (shape ", x.shape(),
                ") but weight expects ", w.size(1), " (shape ", w.shape(), ")");
  backend::Conv2dGeometry g{x.size(0), x.size(1), x.size(2), x.size(3), w.size(0), w.size(2), w.size(3),
                            stride,    stride,    padding,   padding,   0,         0};
  const std::int64_t hp = g.h + 2 * g.ph, wp = g.w + 2 * g.pw;
  TINYNET_CHECK(ShapeError, g.kh <= hp && g.kw <= wp, "conv2d: kernel ", g.kh, "x", g.kw,
                " is larger than the padded input ", hp, "x", wp, " (input shape ", x.shape(), ", padding ", padding,
                ")");
  g.oh = (hp - g.kh) / g.sh + 1;
  g.ow = (wp - g.kw) / g.sw + 1;
  return g;
}

// y[n,o] = b[o] + sum_{c,i,j} W[o,c,i,j] x[n,c,s*y+i-p, s*x+j-p]
// dx = col2im(W^T gy);  dW = sum_n gy[n] col(x[n])^T;  db = sum_{n,y,x} gy.  Saves x and W.
// Fused with a ReLU (conv2d_relu) it also saves its output y and uses gy * [y > 0].
// The backward products are computed as the forward ones were (autocast).
class Conv2dNode final : public autograd::Node {
 public:
  Conv2dNode(Tensor x, Tensor w, backend::Conv2dGeometry g, backend::Products products, Tensor y_relu = Tensor())
      : x_(std::move(x)), w_(std::move(w)), y_relu_(std::move(y_relu)), g_(g), products_(products) {}
  const char* name() const override { return y_relu_.defined() ? "conv2d_relu" : "conv2d"; }
  void release() override { x_ = w_ = y_relu_ = Tensor(); }
  void backward(const Tensor& gy) override {
    autograd::GradSlot sx, sw, sb;
    if (needs_input_grad(0)) sx = input_grad(0);
    if (needs_input_grad(1)) sw = input_grad(1);
    if (needs_input_grad(2)) sb = input_grad(2);
    dispatch(gy, name(), [&]<typename T>(auto be) {
      Tensor scratch = empty(Shape{conv2d_backward_scratch(be, g_, y_relu_.defined(), products_)}, gy.options());
      conv2d_backward(be, g_, x_.data<T>(), w_.data<T>(), gy.data<T>(), sx.template data_or_null<T>(), sx.accumulate,
                      sw.template data_or_null<T>(), sw.accumulate, sb.template data_or_null<T>(), sb.accumulate,
                      scratch.data<T>(), data_or_null<T>(y_relu_), products_);
    });
  }

 private:
  Tensor x_, w_, y_relu_;
  backend::Conv2dGeometry g_;
  backend::Products products_;
};

inline Tensor conv2d_impl(const Tensor& x, const Tensor& weight, const Tensor& bias, int stride, int padding,
                          bool relu) {
  if (bf16_activation(x))  // its values are bfloat16 already: the same products, the output rounded
    return cast(conv2d_impl(cast(x, DType::float32), weight, bias, stride, padding, relu), DType::bfloat16);
  const char* op = relu ? "conv2d_relu" : "conv2d";
  check_float_input(op, x);
  check_float_input(op, weight, "weight");
  check_same_kind(op, x, weight, "weight");
  const auto g = conv2d_geometry(x, weight, stride, padding);
  if (bias.defined()) {
    check_same_kind(op, x, bias, "bias");
    TINYNET_CHECK(ShapeError, bias.shape() == Shape{g.out_c}, op, ": bias has shape ", bias.shape(), ", expected [",
                  g.out_c, "]");
  }
  Tensor y = new_output(Shape{g.n, g.out_c, g.oh, g.ow}, x);
  const backend::Products products = autocast_products(x.device(), x.dtype());
  dispatch(x, op, [&]<typename T>(auto be) {
    Tensor scratch = empty(Shape{conv2d_forward_scratch(be, g, products)}, x.options());
    conv2d_forward(be, g, x.data<T>(), weight.data<T>(), data_or_null<T>(bias), y.data<T>(), scratch.data<T>(), relu,
                   products);
  });
  if (autograd::any_needs_grad(x, weight, bias))
    autograd::record(y, std::make_shared<Conv2dNode>(x, weight, g, products, relu ? y.detach() : Tensor()),
                     {&x, &weight, &bias});
  return y;
}

}  // namespace ops::detail

/// 2-d convolution (cross-correlation, as in PyTorch). x: [N, C, H, W], weight:
/// [out_channels, C, kH, kW], bias: [out_channels] or undefined. Square stride and
/// zero padding. Output: [N, out_channels, (H + 2p - kH)/s + 1, (W + 2p - kW)/s + 1].
inline Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), int stride = 1,
                     int padding = 0) {
  return ops::detail::conv2d_impl(x, weight, bias, stride, padding, false);
}

/// relu(conv2d(...)) in one op (PyTorch's fused ConvReLU2d): the same values and
/// gradients, without a pass over the output for the ReLU and one for its gradient.
/// nn::Sequential uses it for a Conv2d followed by a ReLU.
inline Tensor conv2d_relu(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), int stride = 1,
                          int padding = 0) {
  return ops::detail::conv2d_impl(x, weight, bias, stride, padding, true);
}

}  // namespace tinynet
