#pragma once
/// \file
/// Compile-time shapes of one sample (the batch dimension stays dynamic).

#include <array>
#include <cstdint>
#include <span>

#include "tinynet/core/error.hpp"

namespace tinynet::nn {

/// The shape of one sample, known at compile time: Sample<1, 28, 28> (C, H, W) or
/// Sample<9216> (features). Compile errors print it in this form.
template <std::int64_t... Dims>
struct Sample {
  static constexpr int rank = sizeof...(Dims);
  static constexpr std::array<std::int64_t, sizeof...(Dims)> dims{Dims...};
  static constexpr std::int64_t numel = (std::int64_t{1} * ... * Dims);
};

/// The first entry of a Sequential: the shape of one input sample.
template <std::int64_t... Dims>
struct Input {
  static_assert(sizeof...(Dims) >= 1, "Input<...>: give at least one extent, e.g. Input<1, 28, 28>");
  static_assert(((Dims > 0) && ...), "Input<...>: every extent must be positive");
  using shape = Sample<Dims...>;
};

/// Run-time view of a sample shape, handed to layer constructors by Sequential.
using SampleDims = std::span<const std::int64_t>;

namespace detail {
template <class>
inline constexpr bool always_false = false;

/// `value` if positive; otherwise ValueError naming the layer and the argument.
inline std::int64_t positive(std::int64_t value, const char* layer, const char* what) {
  TINYNET_CHECK(ValueError, value > 0, layer, ": ", what, " must be positive, got ", value);
  return value;
}
}  // namespace detail

}  // namespace tinynet::nn
