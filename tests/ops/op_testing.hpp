#pragma once
/// \file
/// Helpers for the op and autograd tests: float64 inputs drawn from a fixed seed, inputs
/// kept away from kinks and ties, element access as doubles, and a gradcheck wrapper that
/// checks every input that requires grad.

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <span>
#include <tinynet/tinynet.hpp>
#include <vector>

namespace tinynet::testing {

/// Largest relative error a float64 gradcheck may report for a correct gradient.
inline constexpr double kGradTolerance = 1e-6;

/// Uniform float64 values in [lo, hi) from generator seed `seed`.
inline Tensor random_input(const Shape& shape, std::uint64_t seed, bool requires_grad = true, double lo = -1.0,
                           double hi = 1.0) {
  Generator gen(seed);
  return uniform(shape, lo, hi, {.dtype = DType::float64, .requires_grad = requires_grad}, gen);
}

/// Like random_input, with every value at least `margin` away from 0 (for ReLU, whose
/// derivative jumps there, and for divisors).
inline Tensor away_from_zero(const Shape& shape, std::uint64_t seed, double margin = 0.05, bool requires_grad = true) {
  Tensor t = random_input(shape, seed, false);
  double* p = t.data<double>();
  for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = p[i] < 0 ? p[i] - margin : p[i] + margin;
  if (requires_grad) t.requires_grad_();
  return t;
}

/// float64 values that are pairwise at least `spacing` apart, in a random order (keeps
/// max-pool gradchecks away from ties, where the gradient is not defined).
inline Tensor distinct_values(const Shape& shape, std::uint64_t seed, double spacing = 0.01,
                              bool requires_grad = true) {
  const Tensor keys = random_input(shape, seed, false);
  std::vector<std::int64_t> order(static_cast<std::size_t>(shape.numel()));
  std::iota(order.begin(), order.end(), 0);
  const double* k = keys.data<double>();
  std::sort(order.begin(), order.end(), [k](std::int64_t a, std::int64_t b) { return k[a] < k[b]; });
  Tensor t = empty(shape, {.dtype = DType::float64});
  const double mid = 0.5 * spacing * static_cast<double>(order.size());
  for (std::size_t rank = 0; rank < order.size(); ++rank)
    t.data<double>()[order[rank]] = spacing * static_cast<double>(rank) - mid;
  if (requires_grad) t.requires_grad_();
  return t;
}

/// The values of a float32 / float64 tensor, as doubles.
inline std::vector<double> values(const Tensor& t) {
  return dispatch_floating(t.dtype(), "values", [&]<typename T>() {
    const T* p = t.data<T>();
    return std::vector<double>(p, p + t.numel());
  });
}

/// The values of a tensor of any dtype on any device, as doubles (bool gives 0 and 1).
inline std::vector<double> all_values(const Tensor& t) { return values(t.to(Device::cpu()).to(DType::float64)); }

/// Every element of `actual` within `tol` (relative above 1, absolute below) of `expected`;
/// a failure reports how many differ and the first one.
inline void check_close(const std::vector<double>& actual, const std::vector<double>& expected, double tol) {
  CHECK(actual.size() == expected.size());
  if (actual.size() != expected.size()) return;
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < actual.size(); ++i)
    if (!(std::abs(actual[i] - expected[i]) <= tol * std::max(1.0, std::abs(expected[i]))) && bad++ == 0) first = i;
  INFO(bad << " of " << actual.size() << " elements differ; first, element " << first << ": got "
           << (bad ? actual[first] : 0.0) << ", expected " << (bad ? expected[first] : 0.0));
  CHECK(bad == 0);
}

inline void check_close(const Tensor& actual, const std::vector<double>& expected, double tol) {
  check_close(values(actual), expected, tol);
}

/// Elements of every input of `inputs` that requires grad.
inline std::int64_t grad_elements(const std::vector<Tensor>& inputs) {
  std::int64_t n = 0;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) n += t.numel();
  return n;
}

/// gradcheck of `fn` over `inputs`: every element of every input that requires grad is
/// compared, and the worst relative error must be within kGradTolerance.
inline void check_gradients(const std::function<Tensor(std::span<const Tensor>)>& fn, std::vector<Tensor> inputs) {
  const std::int64_t expected = grad_elements(inputs);
  REQUIRE(expected > 0);
  const GradcheckResult r = gradcheck(fn, std::move(inputs));
  INFO("worst: input " << r.worst_input << " element " << r.worst_index << ": analytic " << r.analytic << ", numeric "
                       << r.numeric);
  CHECK(r.checked == expected);
  CHECK(r.max_rel_error <= kGradTolerance);
}

/// Backward adds into a gradient that is already there: each input's gradient, pre-filled
/// with a sentinel S, must end as S + the gradient a fresh backward writes (the same check
/// as tests/autograd/test_tape.cpp's, for one op).
inline void check_accumulates(const std::function<Tensor(std::span<const Tensor>)>& fn, std::vector<Tensor> inputs) {
  const Tensor probe = fn(inputs);
  Generator gen(99);
  const Tensor seed = randn(probe.shape(), {.dtype = probe.dtype()}, gen);
  for (Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) t.set_grad(Tensor());
  fn(inputs).backward(seed);
  std::vector<std::vector<double>> expected(inputs.size());
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    Tensor& t = inputs[k];
    if (!t.defined() || !t.requires_grad()) continue;
    REQUIRE(t.grad().defined());
    const std::vector<double> fresh = values(t.grad());
    const Tensor sentinel = random_input(t.shape(), 1000 + k, false, 100.0, 200.0).to(t.dtype());
    const std::vector<double> s = values(sentinel);
    for (std::size_t i = 0; i < fresh.size(); ++i) expected[k].push_back(s[i] + fresh[i]);
    t.set_grad(sentinel);
  }
  fn(inputs).backward(seed);
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    if (expected[k].empty()) continue;
    INFO("input " << k);
    check_close(inputs[k].grad(), expected[k], 1e-14);
    inputs[k].set_grad(Tensor());
  }
}

}  // namespace tinynet::testing
