#pragma once
/// \file
/// max_pool2d and avg_pool2d over NCHW input, square windows; adaptive_avg_pool2d to a given
/// output size.

#include <array>
#include <cstdint>

#include "tinynet/core/detail/tensor.hpp"

namespace tinynet {

/// Max over kernel x kernel windows; stride defaults to the kernel (stride = 0 means that).
TINYNET_OP Tensor max_pool2d(const Tensor& x, int kernel, int stride = 0, int padding = 0);

/// Mean over kernel x kernel windows; stride defaults to the kernel; zero padding counts
/// toward the mean (PyTorch's default count_include_pad = true).
TINYNET_OP Tensor avg_pool2d(const Tensor& x, int kernel, int stride = 0, int padding = 0);

/// Mean over the windows that split each H x W plane into output_size = {OH, OW} parts, as
/// PyTorch's F.adaptive_avg_pool2d: output row i averages input rows [floor(i H / OH),
/// ceil((i + 1) H / OH)), columns alike; {1, 1} is global average pooling. Any sizes, an
/// output larger than the input included. x: [N, C, H, W] -> [N, C, OH, OW].
TINYNET_OP Tensor adaptive_avg_pool2d(const Tensor& x, std::array<std::int64_t, 2> output_size);

}  // namespace tinynet

#if !defined(TINYNET_OPS_DECLARED_ONLY)  // the bodies: core/config.hpp, TINYNET_OP

#include "tinynet/backend/cpu/pool2d.hpp"
#include "tinynet/backend/cuda/pool2d.hpp"  // empty in builds without CUDA
#include "tinynet/ops/common.hpp"

namespace tinynet {

namespace ops::detail {

inline backend::Pool2dGeometry pool2d_geometry(const char* op, const Tensor& x, int kernel, int stride, int padding) {
  check_rank(op, x, 4, "input", "N, C, H, W");
  TINYNET_CHECK(ValueError, kernel >= 1, op, ": kernel_size must be >= 1, got ", kernel);
  TINYNET_CHECK(ValueError, stride >= 1, op, ": stride must be >= 1, got ", stride);
  TINYNET_CHECK(ValueError, padding >= 0 && 2 * padding <= kernel, op,
                ": padding must be between 0 and half the kernel (", kernel, "), got ", padding);
  backend::Pool2dGeometry g{x.size(0) * x.size(1), x.size(2), x.size(3), kernel, stride, padding, 0, 0};
  TINYNET_CHECK(ShapeError, g.h + 2 * padding >= kernel && g.w + 2 * padding >= kernel, op, ": kernel ", kernel, "x",
                kernel, " is larger than the padded input ", g.h + 2 * padding, "x", g.w + 2 * padding,
                " (input shape ", x.shape(), ")");
  g.oh = (g.h + 2 * padding - kernel) / stride + 1;
  g.ow = (g.w + 2 * padding - kernel) / stride + 1;
  return g;
}

// y = max over each window; dL/dx[argmax] += dL/dy.  Saves the argmax indices.
class MaxPool2dNode final : public autograd::Node {
 public:
  MaxPool2dNode(Tensor idx, backend::Pool2dGeometry g) : idx_(std::move(idx)), g_(g) {}
  const char* name() const override { return "max_pool2d"; }
  void release() override { idx_ = Tensor(); }
  void backward(const Tensor& gy) override {
    auto s = input_grad(0);
    dispatch_with_bf16(gy, name(), [&]<typename T>(auto be) {
      max_pool2d_backward(be, g_, gy.data<T>(), idx_.data<std::int32_t>(), s.grad.data<T>(), s.accumulate);
    });
  }

 private:
  Tensor idx_;
  backend::Pool2dGeometry g_;
};

// y = mean over each window (zero padding counted);  dL/dx += dL/dy / k^2 over the window.
class AvgPool2dNode final : public autograd::Node {
 public:
  explicit AvgPool2dNode(backend::Pool2dGeometry g) : g_(g) {}
  const char* name() const override { return "avg_pool2d"; }
  void backward(const Tensor& gy) override {
    auto s = input_grad(0);
    dispatch_with_bf16(gy, name(), [&]<typename T>(auto be) {
      avg_pool2d_backward(be, g_, gy.data<T>(), s.grad.data<T>(), s.accumulate);
    });
  }

 private:
  backend::Pool2dGeometry g_;
};

// y = mean over each adaptive window;  dL/dx += dL/dy / (window area) over the window.
class AdaptiveAvgPool2dNode final : public autograd::Node {
 public:
  explicit AdaptiveAvgPool2dNode(backend::AdaptivePool2dGeometry g) : g_(g) {}
  const char* name() const override { return "adaptive_avg_pool2d"; }
  void backward(const Tensor& gy) override {
    auto s = input_grad(0);
    dispatch_with_bf16(gy, name(), [&]<typename T>(auto be) {
      adaptive_avg_pool2d_backward(be, g_, gy.data<T>(), s.grad.data<T>(), s.accumulate);
    });
  }

 private:
  backend::AdaptivePool2dGeometry g_;
};

}  // namespace ops::detail

TINYNET_OP Tensor max_pool2d(const Tensor& x, int kernel, int stride, int padding) {
  using namespace ops::detail;
  check_activation_input("max_pool2d", x);
  const auto g = pool2d_geometry("max_pool2d", x, kernel, stride == 0 ? kernel : stride, padding);
  Tensor y = new_output(Shape{x.size(0), x.size(1), g.oh, g.ow}, x);
  Tensor idx(y.shape(), {DType::int32, x.device(), false});
  dispatch_with_bf16(x, "max_pool2d", [&]<typename T>(auto be) {
    max_pool2d_forward(be, g, x.data<T>(), y.data<T>(), idx.data<std::int32_t>());
  });
  if (autograd::needs_grad(x)) autograd::record(y, std::make_shared<MaxPool2dNode>(idx, g), {&x});
  return y;
}

TINYNET_OP Tensor avg_pool2d(const Tensor& x, int kernel, int stride, int padding) {
  using namespace ops::detail;
  check_activation_input("avg_pool2d", x);
  const auto g = pool2d_geometry("avg_pool2d", x, kernel, stride == 0 ? kernel : stride, padding);
  Tensor y = new_output(Shape{x.size(0), x.size(1), g.oh, g.ow}, x);
  dispatch_with_bf16(x, "avg_pool2d",
                     [&]<typename T>(auto be) { avg_pool2d_forward(be, g, x.data<T>(), y.data<T>()); });
  if (autograd::needs_grad(x)) autograd::record(y, std::make_shared<AvgPool2dNode>(g), {&x});
  return y;
}

TINYNET_OP Tensor adaptive_avg_pool2d(const Tensor& x, std::array<std::int64_t, 2> output_size) {
  using namespace ops::detail;
  constexpr const char* op = "adaptive_avg_pool2d";
  check_activation_input(op, x);
  check_rank(op, x, 4, "input", "N, C, H, W");
  const auto [oh, ow] = output_size;
  TINYNET_CHECK(ValueError, oh >= 1 && ow >= 1, op, ": output_size must be positive, got {", oh, ", ", ow, "}");
  TINYNET_CHECK(ShapeError, x.size(2) >= 1 && x.size(3) >= 1, op, ": input planes must not be empty, got shape ",
                x.shape());
  const backend::AdaptivePool2dGeometry g{x.size(0) * x.size(1), x.size(2), x.size(3), oh, ow};
  Tensor y = new_output(Shape{x.size(0), x.size(1), oh, ow}, x);
  dispatch_with_bf16(x, op, [&]<typename T>(auto be) { adaptive_avg_pool2d_forward(be, g, x.data<T>(), y.data<T>()); });
  if (autograd::needs_grad(x)) autograd::record(y, std::make_shared<AdaptiveAvgPool2dNode>(g), {&x});
  return y;
}

}  // namespace tinynet

#endif  // !TINYNET_OPS_DECLARED_ONLY
