#pragma once
/// \file
/// BatchNorm1d and BatchNorm2d: per-channel normalisation with a learned scale and shift
/// (unless nn::no_affine) and running statistics (used in eval mode). Both are one template,
/// BatchNorm<Dims, A>, that differs only in the input ranks it takes.

#include <string>

#include "tinynet/nn/activation.hpp"
#include "tinynet/nn/module.hpp"
#include "tinynet/nn/sample.hpp"
#include "tinynet/ops/batch_norm.hpp"

namespace tinynet::nn {

/// Whether a batch norm layer learns a per-channel scale and shift (PyTorch's affine). A
/// template argument, so that Sequential's parameter_count knows it.
enum class Affine : bool { none = false, learned = true };

/// BatchNorm<1, no_affine>, BatchNorm<2, no_affine>: PyTorch's affine=False.
inline constexpr Affine no_affine = Affine::none;

/// Dims = 1: [N, C] or [N, C, L] inputs (a sample [C] or [C, L]); Dims = 2: [N, C, H, W]
/// (a sample [C, H, W]). Statistics are per channel C, over the batch and the other dims.
template <int Dims, Affine A = Affine::learned>
class BatchNorm : public Module<BatchNorm<Dims, A>> {
  static_assert(Dims == 1 || Dims == 2, "BatchNorm<Dims, A>: Dims is 1 (BatchNorm1d) or 2 (BatchNorm2d)");
  static constexpr const char* kName = Dims == 1 ? "BatchNorm1d" : "BatchNorm2d";
  static constexpr bool kAffine = A == Affine::learned;

 public:
  /// "BatchNorm2d", or "BatchNorm2d<Affine::none>" without the learned scale and shift.
  static std::string type_name() { return std::string(kName) + (kAffine ? "" : "<Affine::none>"); }

  template <class In>
  struct shape {
    static_assert(Dims == 2 || In::rank == 1 || In::rank == 2,
                  "BatchNorm1d: expects a [features] or [channels, length] input; the input shape is the "
                  "Sample<...> in the instantiation lines around this error");
    static_assert(Dims == 1 || In::rank == 3,
                  "BatchNorm2d: expects a [channels, height, width] input; the input shape is the Sample<...> "
                  "in the instantiation lines around this error");
    using output = In;
    static constexpr std::int64_t parameters = kAffine ? 2 * In::dims[0] : 0;
  };

  /// A layer over `num_features` channels. `affine` must agree with A (a ValueError
  /// otherwise): the template argument decides, so that parameter counts are right.
  explicit BatchNorm(std::int64_t num_features, double eps = 1e-5, double momentum = 0.1, bool affine = kAffine)
      : running_mean_(zeros(Shape{detail::positive(num_features, kName, "num_features")})),
        running_var_(ones(Shape{num_features})),
        num_batches_tracked_(zeros(Shape{}, {DType::int64})),
        eps_(eps),
        momentum_(momentum) {
    TINYNET_CHECK(ValueError, affine == kAffine, kName, ": constructed with affine = ", affine ? "true" : "false",
                  ", but its template arguments say ",
                  kAffine ? "affine (write BatchNorm<Dims, nn::no_affine>)" : "nn::no_affine");
    if constexpr (kAffine) {
      weight_ = ones(Shape{num_features}).requires_grad_();
      bias_ = zeros(Shape{num_features}).requires_grad_();
    }
  }
  /// Built by Sequential from the input sample shape (channels first).
  explicit BatchNorm(SampleDims in) : BatchNorm(in[0]) {}

  /// The epsilon added to the variance (the ONNX exporter writes it).
  double eps() const { return eps_; }
  double momentum() const { return momentum_; }

  Tensor forward(const Tensor& x) { return run(x, false); }
  /// relu(forward(x)) as one fused op (batch_norm_relu): a BatchNorm absorbs the ReLU after
  /// it (Sequential calls this for that pair).
  Tensor forward_with(const ReLU&, const Tensor& x) { return run(x, true); }

  template <class V>
  void visit(V&& v) {
    if constexpr (kAffine) {
      v("weight", weight_, TensorKind::parameter);
      v("bias", bias_, TensorKind::parameter);
    }
    v("running_mean", running_mean_, TensorKind::buffer);
    v("running_var", running_var_, TensorKind::buffer);
    v("num_batches_tracked", num_batches_tracked_, TensorKind::buffer);
  }

  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }
  const Tensor& running_mean() const { return running_mean_; }
  const Tensor& running_var() const { return running_var_; }
  /// The training batches seen (an int64 scalar on the module's device), as in PyTorch.
  const Tensor& num_batches_tracked() const { return num_batches_tracked_; }

 private:
  Tensor run(const Tensor& x, bool relu) {
    if constexpr (Dims == 1)
      TINYNET_CHECK(ShapeError, x.dim() == 2 || x.dim() == 3,
                    "BatchNorm1d: expected input of rank 2 (N, C) or 3 (N, C, L), got shape ", x.shape());
    else
      TINYNET_CHECK(ShapeError, x.dim() == 4, "BatchNorm2d: expected input of rank 4 (N, C, H, W), got shape ",
                    x.shape());
    TINYNET_CHECK(ShapeError, x.size(1) == running_mean_.numel(), kName, ": expected ", running_mean_.numel(),
                  " channels (dim 1), got shape ", x.shape());
    if (this->is_training()) num_batches_tracked_.add_(1);  // on its device: no wait for the GPU
    const auto op = relu ? batch_norm_relu : batch_norm;
    return op(x, running_mean_, running_var_, weight_, bias_, this->is_training(), momentum_, eps_);
  }

  Tensor weight_, bias_, running_mean_, running_var_, num_batches_tracked_;
  double eps_, momentum_;
};

/// PyTorch's nn.BatchNorm1d: [N, C] or [N, C, L].
using BatchNorm1d = BatchNorm<1>;
/// PyTorch's nn.BatchNorm2d: [N, C, H, W].
using BatchNorm2d = BatchNorm<2>;

}  // namespace tinynet::nn
