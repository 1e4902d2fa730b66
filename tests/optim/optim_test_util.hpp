#pragma once
// Helpers for the optimizer tests: a tiny least-squares problem whose gradients come from
// tinynet's autograd, the same problem's gradients worked out by hand in double, and
// comparisons.

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <string>
#include <tinynet/optim/adadelta.hpp>
#include <tinynet/optim/adam.hpp>
#include <tinynet/optim/lr_scheduler.hpp>
#include <tinynet/optim/sgd.hpp>
#include <tinynet/tinynet.hpp>
#include <vector>

namespace optim_test {

using namespace tinynet;

/// loss(W, b) = mean((x W^T + b - y)^2) with x [kN, kIn], y [kN, kOut], W [kOut, kIn], b [kOut].
/// Fixed, irregular data so that every parameter gets a distinct gradient.
struct LinearProblem {
  static constexpr int kN = 5, kIn = 3, kOut = 2;
  std::vector<double> x, y, w0, b0;

  LinearProblem() {
    for (int i = 0; i < kN * kIn; ++i) x.push_back(std::sin(1.3 * i + 0.4) * (1.0 + 0.1 * i));
    for (int i = 0; i < kN * kOut; ++i) y.push_back(std::cos(0.7 * i) - 0.25);
    w0 = {0.5, -0.75, 0.25, -0.5, 1.0, 0.125};
    b0 = {0.25, -0.375};
  }

  /// dloss/dW and dloss/db at (w, b), in double, by hand: r = x W^T + b - y,
  /// dW[o][i] = 2/(N Out) sum_n r[n][o] x[n][i], db[o] = 2/(N Out) sum_n r[n][o].
  void gradient(const std::vector<double>& w, const std::vector<double>& b, std::vector<double>& gw,
                std::vector<double>& gb) const {
    gw.assign(w.size(), 0.0);
    gb.assign(b.size(), 0.0);
    const double scale = 2.0 / (kN * kOut);
    for (int n = 0; n < kN; ++n)
      for (int o = 0; o < kOut; ++o) {
        double r = b[o] - y[n * kOut + o];
        for (int i = 0; i < kIn; ++i) r += x[n * kIn + i] * w[o * kIn + i];
        for (int i = 0; i < kIn; ++i) gw[o * kIn + i] += scale * r * x[n * kIn + i];
        gb[o] += scale * r;
      }
  }

  /// Leaf parameters W, b of `dtype` holding w0, b0.
  std::vector<Tensor> make_params(DType dtype) const {
    Tensor w = from_vector(w0, {kOut, kIn}).to(dtype), b = from_vector(b0, {kOut}).to(dtype);
    w.requires_grad_();
    b.requires_grad_();
    return {w, b};
  }

  /// Fills W.grad and b.grad through tinynet's autograd (after clearing them).
  void backward(const std::vector<Tensor>& params) const {
    const DType dt = params[0].dtype();
    const Tensor xt = from_vector(x, {kN, kIn}).to(dt), yt = from_vector(y, {kN, kOut}).to(dt);
    for (Tensor p : params) p.set_grad(Tensor());
    mean(pow(linear(xt, params[0], params[1]) - yt, 2.0)).backward();
  }
};

/// The values of a tensor as doubles.
inline std::vector<double> values(const Tensor& t) {
  const Tensor d = t.to(DType::float64);
  return {d.data<double>(), d.data<double>() + d.numel()};
}

/// Every |actual - expected| <= tol * max(1, |expected|); a failure names the worst element.
inline void check_close(const std::vector<double>& actual, const std::vector<double>& expected, double tol,
                        const std::string& what) {
  REQUIRE(actual.size() == expected.size());
  double worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double err = std::abs(actual[i] - expected[i]) / std::max(1.0, std::abs(expected[i]));
    if (!(err <= worst)) worst = err, at = i;  // also catches NaN
  }
  INFO(what << "[" << at << "]: actual " << actual[at] << ", expected " << expected[at] << " (of " << actual.size()
            << " values)");
  CHECK(worst <= tol);
}

/// The tolerance for a dtype: 1e-12 for float64, 1e-6 for float32.
inline double tolerance(DType dt) { return dt == DType::float64 ? 1e-12 : 1e-6; }

/// Bitwise equality of two tensors' contents.
inline bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

/// Bitwise equality of two state_dicts (names, order, dtypes, shapes, values).
inline bool same_state(const StateDict& a, const StateDict& b) {
  if (a.size() != b.size()) return false;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib)
    if (ia->first != ib->first || !same_bits(ia->second, ib->second)) return false;
  return true;
}

/// Deep copies of leaf parameters, themselves leaves that require grad.
inline std::vector<Tensor> clone_params(const std::vector<Tensor>& params) {
  std::vector<Tensor> out;
  for (const Tensor& p : params) out.push_back(p.clone().requires_grad_());
  return out;
}

}  // namespace optim_test

namespace optim_test {

/// Runs `steps` updates of Opt(options) on LinearProblem in `dtype`, with gradients from
/// autograd, and after each one compares W and b with `ref` (a re-implementation in double
/// with `update(param_index, values, grad)`) fed the hand-computed gradients.
template <typename Opt, typename Options, typename Ref>
void check_against_reference(const Options& options, Ref ref, DType dtype, int steps, const std::string& label) {
  INFO(label << " in " << dtype_name(dtype));
  const LinearProblem prob;
  const std::vector<Tensor> params = prob.make_params(dtype);
  Opt opt(params, options);
  std::vector<double> w = prob.w0, b = prob.b0, gw, gb;
  for (int s = 1; s <= steps; ++s) {
    prob.backward(params);
    opt.step();
    prob.gradient(w, b, gw, gb);
    ref.update(0, w, gw);
    ref.update(1, b, gb);
    check_close(values(params[0]), w, tolerance(dtype), "step " + std::to_string(s) + " W");
    check_close(values(params[1]), b, tolerance(dtype), "step " + std::to_string(s) + " b");
  }
}

}  // namespace optim_test
