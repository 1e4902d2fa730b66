#pragma once
/// \file
/// Creation functions: empty, zeros, ones, full (and their _like forms), arange, rand, randn,
/// uniform, from_buffer, from_vector, tensor.

#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

#include "tinynet/core/random.hpp"
#include "tinynet/core/tensor.hpp"

namespace tinynet {

/// Uninitialised tensor.
inline Tensor empty(const Shape& shape, TensorOptions opts = {}) { return Tensor(shape, opts); }

/// Tensor filled with `value`.
inline Tensor full(const Shape& shape, double value, TensorOptions opts = {}) {
  Tensor t(shape, {opts.dtype, opts.device, false});
  t.fill_(value);
  if (opts.requires_grad) t.requires_grad_();
  return t;
}
inline Tensor zeros(const Shape& shape, TensorOptions opts = {}) { return full(shape, 0.0, opts); }
inline Tensor ones(const Shape& shape, TensorOptions opts = {}) { return full(shape, 1.0, opts); }

/// A tensor of t's shape, dtype and device (not requiring grad), uninitialised.
inline Tensor empty_like(const Tensor& t) { return empty(t.shape(), t.options()); }
/// A tensor of t's shape, dtype and device filled with `value`.
inline Tensor full_like(const Tensor& t, double value) { return full(t.shape(), value, t.options()); }
/// full_like with other options: `full_like(x, 1.0, {.dtype = DType::float64})`.
inline Tensor full_like(const Tensor& t, double value, TensorOptions opts) { return full(t.shape(), value, opts); }
/// Zeros of t's shape, dtype and device.
inline Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.options()); }
/// Zeros of t's shape, with other options.
inline Tensor zeros_like(const Tensor& t, TensorOptions opts) { return zeros(t.shape(), opts); }
/// Ones of t's shape, dtype and device.
inline Tensor ones_like(const Tensor& t) { return ones(t.shape(), t.options()); }
/// Ones of t's shape, with other options.
inline Tensor ones_like(const Tensor& t, TensorOptions opts) { return ones(t.shape(), opts); }

namespace detail {

template <typename Draw>
Tensor random_tensor(const Shape& shape, TensorOptions opts, Draw draw) {
  TINYNET_CHECK(TypeError, is_floating(opts.dtype), "random tensors must be float32 or float64, got ", opts.dtype);
  Tensor t(shape, {opts.dtype, Device::cpu(), false});
  dispatch_floating(opts.dtype, "random", [&]<typename T>() {
    T* p = t.data<T>();
    for (std::int64_t i = 0, n = t.numel(); i < n; ++i) p[i] = draw.template operator()<T>(i);
  });
  if (!opts.device.is_cpu()) t = t.to(opts.device);
  if (opts.requires_grad) t.requires_grad_();
  return t;
}

}  // namespace detail

/// Uniform in [low, high), from `gen` (the default generator if omitted).
inline Tensor uniform(const Shape& shape, double low, double high, TensorOptions opts = {},
                      Generator& gen = default_generator()) {
  TINYNET_CHECK(ValueError, low <= high, "uniform: low (", low, ") must not exceed high (", high, ")");
  const RandomStream rs = gen.reserve(static_cast<std::uint64_t>(shape.numel()));
  return detail::random_tensor(shape, opts, [&]<typename T>(std::int64_t i) {
    const T v = static_cast<T>(low + (high - low) * rs.uniform<double>(static_cast<std::uint64_t>(i)));
    // Rounding to T (a draw within 2^-25 of 1, as float) can land on `high`: keep it half-open.
    return v < static_cast<T>(high) ? v : std::nextafter(static_cast<T>(high), static_cast<T>(low));
  });
}

/// Uniform in [0, 1).
inline Tensor rand(const Shape& shape, TensorOptions opts = {}, Generator& gen = default_generator()) {
  return uniform(shape, 0.0, 1.0, opts, gen);
}

/// Standard normal.
inline Tensor randn(const Shape& shape, TensorOptions opts = {}, Generator& gen = default_generator()) {
  const RandomStream rs = gen.reserve(static_cast<std::uint64_t>(shape.numel()));
  return detail::random_tensor(shape, opts,
                               [&]<typename T>(std::int64_t i) { return rs.normal<T>(static_cast<std::uint64_t>(i)); });
}

/// A tensor holding a copy of `values` (T sets the dtype).
template <typename T>
Tensor from_buffer(std::span<const T> values, const Shape& shape, TensorOptions opts = {}) {
  TINYNET_CHECK(ShapeError, static_cast<std::int64_t>(values.size()) == shape.numel(), "from_buffer: ", values.size(),
                " values given for shape ", shape, " (", shape.numel(), " elements)");
  Tensor t(shape, {dtype_of<T>(), Device::cpu(), false});
  std::copy(values.begin(), values.end(), t.data<T>());
  if (!opts.device.is_cpu()) t = t.to(opts.device);
  if (opts.requires_grad) t.requires_grad_();
  return t;
}

/// A tensor holding a copy of `values` (T sets the dtype; std::vector<bool> gives a bool tensor).
template <typename T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, TensorOptions opts = {}) {
  if constexpr (std::is_same_v<T, bool>) {  // packed bits: no span over them
    const std::unique_ptr<bool[]> bytes(new bool[values.size()]);
    std::copy(values.begin(), values.end(), bytes.get());
    return from_buffer<bool>(std::span<const bool>(bytes.get(), values.size()), shape, opts);
  } else {
    return from_buffer<T>(std::span<const T>(values), shape, opts);
  }
}

/// A 1-d float32 tensor from a braced list: `tensor({1.f, 2.f})`.
template <typename T>
Tensor tensor(std::initializer_list<T> values, TensorOptions opts = {}) {
  return from_buffer<T>(std::span<const T>(values.begin(), values.size()),
                        Shape{static_cast<std::int64_t>(values.size())}, opts);
}

/// A scalar (rank-0) tensor.
inline Tensor scalar_tensor(double value, TensorOptions opts = {}) { return full(Shape{}, value, opts); }

namespace detail {

/// start, start + step, ... up to but not including end, in `opts` (computed in double, as
/// start + i * step, then converted).
inline Tensor arange_values(double start, double end, double step, TensorOptions opts) {
  TINYNET_CHECK(ValueError, step != 0, "arange: step must be nonzero");
  TINYNET_CHECK(ValueError, std::isfinite(start) && std::isfinite(end), "arange: start and end must be finite, got ",
                start, " and ", end);
  TINYNET_CHECK(ValueError, (end - start) / step >= 0, "arange: step ", step, " goes the wrong way from ", start,
                " to ", end);
  const auto n = static_cast<std::int64_t>(std::ceil((end - start) / step));
  Tensor t(Shape{n}, {opts.dtype, Device::cpu(), false});
  dispatch_all(opts.dtype, [&]<typename T>() {
    T* p = t.data<T>();
    for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(start + static_cast<double>(i) * step);
  });
  if (!opts.device.is_cpu()) t = t.to(opts.device);
  if (opts.requires_grad) t.requires_grad_();
  return t;
}

}  // namespace detail

/// 0, 1, ..., end-1 as int64 on the CPU (PyTorch's arange(end) with an integer end).
inline Tensor arange(std::int64_t end) {
  return detail::arange_values(0, static_cast<double>(end), 1, {.dtype = DType::int64});
}
/// start, start + step, ... below `end` (above it for a negative step): int64 when all three
/// are integers, float32 otherwise, as PyTorch infers it.
template <typename A, typename B, typename C = int>
requires std::is_arithmetic_v<A> && std::is_arithmetic_v<B> && std::is_arithmetic_v<C> Tensor arange(A start, B end,
                                                                                                     C step = 1) {
  constexpr bool integral = std::is_integral_v<A> && std::is_integral_v<B> && std::is_integral_v<C>;
  return detail::arange_values(static_cast<double>(start), static_cast<double>(end), static_cast<double>(step),
                               {.dtype = integral ? DType::int64 : DType::float32});
}
/// arange with the dtype, device and requires_grad of `opts` (float32 unless given):
/// `arange(0, 1, 0.25, {.dtype = DType::float64, .device = Device::cuda(0)})`.
inline Tensor arange(double start, double end, double step, TensorOptions opts) {
  return detail::arange_values(start, end, step, opts);
}

}  // namespace tinynet
