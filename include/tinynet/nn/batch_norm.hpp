#pragma once
/// \file
/// BatchNorm2d: per-channel normalisation with learned scale and shift and running
/// statistics (used in eval mode).

#include "tinynet/nn/module.hpp"
#include "tinynet/nn/sample.hpp"
#include "tinynet/ops/batch_norm.hpp"

namespace tinynet::nn {

class BatchNorm2d : public Module<BatchNorm2d> {
 public:
  template <class In>
  struct shape {
    static_assert(In::rank == 3,
                  "BatchNorm2d: expects a [channels, height, width] input; the input shape is the Sample<...> "
                  "in the instantiation lines around this error");
    using output = In;
    static constexpr std::int64_t parameters = 2 * In::dims[0];
  };

  explicit BatchNorm2d(std::int64_t channels, double eps = 1e-5, double momentum = 0.1)
      : weight_(ones(Shape{detail::positive(channels, "BatchNorm2d", "channels")})),
        bias_(zeros(Shape{channels})),
        running_mean_(zeros(Shape{channels})),
        running_var_(ones(Shape{channels})),
        num_batches_tracked_(zeros(Shape{}, {DType::int64})),
        eps_(eps),
        momentum_(momentum) {
    weight_.requires_grad_();
    bias_.requires_grad_();
  }
  explicit BatchNorm2d(SampleDims in) : BatchNorm2d(in[0]) {}

  /// The epsilon added to the variance (the ONNX exporter writes it).
  double eps() const { return eps_; }

  Tensor forward(const Tensor& x) {
    TINYNET_CHECK(ShapeError, x.dim() == 4, "BatchNorm2d: expected input of rank 4 (N, C, H, W), got shape ",
                  x.shape());
    if (this->is_training()) ++*num_batches_tracked_.data<std::int64_t>();
    return batch_norm(x, running_mean_, running_var_, weight_, bias_, this->is_training(), momentum_, eps_);
  }

  template <class V>
  void visit(V&& v) {
    v("weight", weight_, TensorKind::parameter);
    v("bias", bias_, TensorKind::parameter);
    v("running_mean", running_mean_, TensorKind::buffer);
    v("running_var", running_var_, TensorKind::buffer);
    v("num_batches_tracked", num_batches_tracked_, TensorKind::buffer);
  }

 private:
  Tensor weight_, bias_, running_mean_, running_var_, num_batches_tracked_;
  double eps_, momentum_;
};

}  // namespace tinynet::nn
