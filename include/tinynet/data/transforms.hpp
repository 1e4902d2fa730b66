#pragma once
/// \file
/// Deterministic transforms of a data set's inputs, like torchvision.transforms.
///
/// A Transform maps a float32 tensor of images [..., C, H, W] to a new one. Image data sets
/// (data/image_dataset.hpp) apply it to each batch as it is gathered, after scaling the bytes
/// to [0, 1]; Normalize also fits in a Compose of per-sample transforms (data/augment.hpp).

#include <algorithm>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "tinynet/core/parallel.hpp"
#include "tinynet/core/tensor.hpp"

namespace tinynet::data {

/// A transform of images: takes float32 [..., C, H, W], returns the transformed tensor.
using Transform = std::function<Tensor(const Tensor&)>;

/// x -> (x - mean[c]) / std[c] for channel c (dim -3), like torchvision's
/// `Normalize(mean, std)`; one mean and std apply to every element.
class Normalize {
 public:
  /// One mean and std for every channel, as `Normalize((mean,), (std,))`.
  Normalize(double mean = 0.0, double std = 1.0) : Normalize(std::vector<double>{mean}, std::vector<double>{std}) {}

  /// A mean and std per channel. Throws ValueError unless both have the same, nonzero
  /// length and every std is positive.
  Normalize(std::vector<double> mean, std::vector<double> std) : mean_(std::move(mean)), std_(std::move(std)) {
    TINYNET_CHECK(ValueError, !mean_.empty() && mean_.size() == std_.size(),
                  "Normalize: expected as many means as stds (at least one), got ", mean_.size(), " and ", std_.size());
    for (std::size_t c = 0; c < mean_.size(); ++c) {
      TINYNET_CHECK(ValueError, std_[c] > 0.0, "Normalize: std must be positive, got ", std_[c],
                    mean_.size() > 1 ? " for a channel" : "");
      mean32_.push_back(static_cast<float>(mean_[c]));
      std32_.push_back(static_cast<float>(std_[c]));
    }
  }

  const std::vector<double>& mean() const { return mean_; }
  const std::vector<double>& std() const { return std_; }
  /// The number of channels it has a mean for (1: every channel).
  std::int64_t channels() const { return static_cast<std::int64_t>(mean_.size()); }

  /// `value` of channel `channel` normalised, in float32 as the tensor form computes it.
  float operator()(float value, std::int64_t channel) const {
    const auto c = static_cast<std::size_t>(mean_.size() == 1 ? 0 : channel);
    return (value - mean32_[c]) / std32_[c];
  }

  /// A new float32 tensor holding (x - mean[c]) / std[c]. Throws TypeError for a tensor that
  /// is not float32 on the CPU, ShapeError when per-channel values meet a tensor that is not
  /// [..., C, H, W] with their C.
  Tensor operator()(const Tensor& x) const {
    TINYNET_CHECK(TypeError, x.dtype() == DType::float32 && x.device().is_cpu(),
                  "Normalize: expected a float32 CPU tensor, got ", x.dtype(), " on ", x.device());
    const std::int64_t c = channels();
    TINYNET_CHECK(ShapeError, c == 1 || (x.dim() >= 3 && x.size(-3) == c), "Normalize: ", c,
                  " channel means need images [..., ", c, ", H, W], got shape ", x.shape());
    Tensor out(x.shape(), {DType::float32, Device::cpu(), false});
    if (x.numel() == 0) return out;
    const std::int64_t plane = c == 1 ? x.numel() : x.size(-2) * x.size(-1);
    const float* in = x.data<float>();
    float* o = out.data<float>();
    parallel_for(x.numel(), kElementwiseGrain, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e;) {  // a run of one channel at a time, so the loop vectorises
        const auto ch = static_cast<std::size_t>((i / plane) % c);
        const std::int64_t end = std::min(e, (i / plane + 1) * plane);
        const float m = mean32_[ch], s = std32_[ch];
        for (; i < end; ++i) o[i] = (in[i] - m) / s;
      }
    });
    return out;
  }

  /// The same, as one step of a Compose of per-sample transforms (it draws no random numbers).
  template <typename Random>
  Tensor operator()(const Tensor& x, Random&) const {
    return (*this)(x);
  }

 private:
  std::vector<double> mean_, std_;
  std::vector<float> mean32_, std32_;
};

}  // namespace tinynet::data
