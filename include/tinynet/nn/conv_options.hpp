#pragma once
/// \file
/// Conv2d's options after Out, K, Stride and Pad, in any order, each at most once:
/// nn::no_bias (PyTorch's bias=False), nn::dilation<D> and nn::groups<G>, e.g. a
/// depthwise 3x3 layer over 32 channels: Conv2d<32, 3, 1, 1, nn::groups<32>, nn::no_bias>.

#include <cstdint>
#include <type_traits>

#include "tinynet/nn/bias.hpp"

namespace tinynet::nn {

/// Spacing between kernel taps (PyTorch's dilation): nn::dilation<D>.
struct Dilation {
  std::int64_t value;
};
/// Channel groups convolved apart (PyTorch's groups): nn::groups<G>.
struct Groups {
  std::int64_t value;
};

template <std::int64_t D>
inline constexpr Dilation dilation{D};
template <std::int64_t G>
inline constexpr Groups groups{G};

namespace detail {

template <auto Option>
using OptionType = std::remove_cvref_t<decltype(Option)>;

/// Reads a Conv2d's options: each value's setting, or the default where it is not given.
template <auto... Options>
struct ConvOptions {
  template <class T>
  static constexpr int count = (0 + ... + (std::is_same_v<OptionType<Options>, T> ? 1 : 0));

  static_assert(((std::is_same_v<OptionType<Options>, Bias> || std::is_same_v<OptionType<Options>, Dilation> ||
                  std::is_same_v<OptionType<Options>, Groups>)&&...),
                "Conv2d<Out, K, Stride, Pad, Options...>: each option is nn::no_bias, nn::dilation<D> or "
                "nn::groups<G>");
  static_assert(count<Bias> <= 1 && count<Dilation> <= 1 && count<Groups> <= 1,
                "Conv2d<Out, K, Stride, Pad, Options...>: give each option at most once");

  template <class T>
  static constexpr T get(T fallback) {
    T value = fallback;
    (
        [&] {
          if constexpr (std::is_same_v<OptionType<Options>, T>) value = Options;
        }(),
        ...);
    return value;
  }

  static constexpr Bias bias = get(Bias::learned);
  static constexpr std::int64_t dilation = get(Dilation{1}).value;
  static constexpr std::int64_t groups = get(Groups{1}).value;
};

}  // namespace detail

}  // namespace tinynet::nn
