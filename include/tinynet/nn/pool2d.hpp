#pragma once
/// \file
/// MaxPool2d<K, Stride, Pad> and AvgPool2d<K, Stride, Pad> (Stride defaults to K), and
/// AdaptiveAvgPool2d<OH, OW> (global average pooling is AdaptiveAvgPool2d<1, 1>).

#include <string>

#include "tinynet/nn/module.hpp"
#include "tinynet/nn/sample.hpp"
#include "tinynet/ops/pool2d.hpp"

namespace tinynet::nn {

namespace detail {

/// Shape rule shared by the pooling layers.
template <std::int64_t K, std::int64_t Stride, std::int64_t Pad>
struct Pool2dShape {
  static_assert(K > 0, "Pool2d<K, Stride, Pad>: K (kernel size) must be positive");
  static_assert(Stride > 0, "Pool2d<K, Stride, Pad>: Stride must be positive");
  static_assert(Pad >= 0 && 2 * Pad <= K, "Pool2d<K, Stride, Pad>: Pad must be between 0 and K / 2");

  template <class In>
  struct shape {
    static_assert(always_false<In>,
                  "MaxPool2d/AvgPool2d: expects a [channels, height, width] input; the input shape is the "
                  "Sample<...> in the instantiation lines around this error");
  };
  template <std::int64_t C, std::int64_t H, std::int64_t W>
  struct shape<Sample<C, H, W>> {
    static constexpr bool fits = K <= H + 2 * Pad && K <= W + 2 * Pad;
    static_assert(fits,
                  "MaxPool2d/AvgPool2d: the window is larger than the (padded) input; the layer index, the layer "
                  "and the input Sample<C, H, W> are in the 'CheckedLayer<index, layer, input>' lines around "
                  "this error");
    using output = Sample<C, fits ? (H + 2 * Pad - K) / Stride + 1 : 1, fits ? (W + 2 * Pad - K) / Stride + 1 : 1>;
    static constexpr std::int64_t parameters = 0;
  };
  template <class V>
  void visit(V&&) {}
};

}  // namespace detail

template <std::int64_t K, std::int64_t Stride = K, std::int64_t Pad = 0>
class MaxPool2d : public Module<MaxPool2d<K, Stride, Pad>>, public detail::Pool2dShape<K, Stride, Pad> {
 public:
  Tensor forward(const Tensor& x) { return max_pool2d(x, K, Stride, Pad); }
};

/// Zero padding counts toward the mean, as in PyTorch's default.
template <std::int64_t K, std::int64_t Stride = K, std::int64_t Pad = 0>
class AvgPool2d : public Module<AvgPool2d<K, Stride, Pad>>, public detail::Pool2dShape<K, Stride, Pad> {
 public:
  Tensor forward(const Tensor& x) { return avg_pool2d(x, K, Stride, Pad); }
};

/// adaptive_avg_pool2d(x, {OH, OW}): any [C, H, W] input to [C, OH, OW].
template <std::int64_t OH, std::int64_t OW = OH>
class AdaptiveAvgPool2d : public Module<AdaptiveAvgPool2d<OH, OW>> {
  static_assert(OH > 0 && OW > 0, "AdaptiveAvgPool2d<OH, OW>: the output size must be positive");

 public:
  /// "AdaptiveAvgPool2d<1>" or "AdaptiveAvgPool2d<2, 3>", however the type was spelled.
  static std::string type_name() {
    return "AdaptiveAvgPool2d<" + std::to_string(OH) + (OH == OW ? "" : ", " + std::to_string(OW)) + ">";
  }
  template <class In>
  struct shape {
    static_assert(detail::always_false<In>,
                  "AdaptiveAvgPool2d: expects a [channels, height, width] input; the input shape is the "
                  "Sample<...> in the instantiation lines around this error");
    using output = In;  // so that the assertion above is the only error
    static constexpr std::int64_t parameters = 0;
  };
  template <std::int64_t C, std::int64_t H, std::int64_t W>
  struct shape<Sample<C, H, W>> {
    using output = Sample<C, OH, OW>;
    static constexpr std::int64_t parameters = 0;
  };

  Tensor forward(const Tensor& x) { return adaptive_avg_pool2d(x, {OH, OW}); }
  template <class V>
  void visit(V&&) {}
};

}  // namespace tinynet::nn
