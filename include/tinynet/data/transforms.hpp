#pragma once
/// \file
/// Deterministic transforms of a data set's inputs, like torchvision.transforms.
///
/// A transform here maps the whole input tensor [N, ...] to a new one and runs once when
/// the data set is loaded: for a deterministic elementwise transform that gives the same
/// values as applying it per sample in every epoch, without the per-batch cost.

#include <cstdint>
#include <functional>

#include "tinynet/core/parallel.hpp"
#include "tinynet/core/tensor.hpp"

namespace tinynet::data {

/// A transform of a data set's input tensor: takes [N, ...], returns the transformed tensor.
using Transform = std::function<Tensor(const Tensor&)>;

/// x -> (x - mean) / std, elementwise over a float32 tensor (single channel), like
/// torchvision's `Normalize((mean,), (std,))`.
struct Normalize {
  double mean = 0.0;
  double std = 1.0;

  /// A new float32 tensor holding (x - mean) / std. Throws ValueError for std <= 0 and
  /// TypeError for a tensor that is not float32 on the CPU.
  Tensor operator()(const Tensor& x) const {
    TINYNET_CHECK(ValueError, std > 0.0, "Normalize: std must be positive, got ", std);
    TINYNET_CHECK(TypeError, x.dtype() == DType::float32 && x.device().is_cpu(),
                  "Normalize: expected a float32 CPU tensor, got ", x.dtype(), " on ", x.device());
    Tensor out(x.shape(), {DType::float32, Device::cpu(), false});
    const float m = static_cast<float>(mean), s = static_cast<float>(std);
    const float* in = x.data<float>();
    float* o = out.data<float>();
    parallel_for(x.numel(), kElementwiseGrain, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) o[i] = (in[i] - m) / s;
    });
    return out;
  }
};

}  // namespace tinynet::data
