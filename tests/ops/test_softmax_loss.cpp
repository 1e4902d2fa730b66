#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <tinynet/tinynet.hpp>
#include <vector>

#include "ops/op_testing.hpp"

using namespace tinynet;
using namespace tinynet::testing;

namespace {

/// softmax or log_softmax of every line along `dim`, naively: x - max - log(sum(exp(x - max))).
std::vector<double> softmax_reference(const std::vector<double>& v, const Shape& s, int dim, bool log) {
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= s[d];
  for (int d = dim + 1; d < s.rank(); ++d) inner *= s[d];
  const std::int64_t n = s[dim];
  std::vector<double> y(v.size());
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      const auto at = [&](std::int64_t k) { return static_cast<std::size_t>((o * n + k) * inner + i); };
      double mx = v[at(0)];
      for (std::int64_t k = 1; k < n; ++k) mx = std::max(mx, v[at(k)]);
      double total = 0;
      for (std::int64_t k = 0; k < n; ++k) total += std::exp(v[at(k)] - mx);
      for (std::int64_t k = 0; k < n; ++k)
        y[at(k)] = log ? v[at(k)] - mx - std::log(total) : std::exp(v[at(k)] - mx) / total;
    }
  return y;
}

struct DimCase {
  Shape shape;
  int dim;
};

// Classes last (the usual [N, C]), first, in the middle (inner > 1), negative dims, 1-d,
// a single class, batch 1.
const DimCase kDims[] = {{{3, 5}, 1},     {{3, 5}, 0}, {{2, 3, 4}, 1}, {{2, 3, 4}, 0},
                         {{2, 3, 4}, -1}, {{6}, 0},    {{4, 1}, 1},    {{1, 7}, -1}};

Tensor targets(std::initializer_list<std::int64_t> t) { return tensor<std::int64_t>(t); }

/// Class indices in [0, classes) for a batch of `n`.
Tensor random_targets(std::int64_t n, std::int64_t classes, std::uint64_t seed) {
  const Tensor u = random_input({n}, seed, false, 0.0, 1.0);
  Tensor t = empty({n}, {.dtype = DType::int64});
  for (std::int64_t i = 0; i < n; ++i)
    t.data<std::int64_t>()[i] =
        std::min(classes - 1, static_cast<std::int64_t>(u.data<double>()[i] * static_cast<double>(classes)));
  return t;
}

std::vector<double> nll_reference(const Tensor& logp, const Tensor& target, Reduction r) {
  const auto v = values(logp);
  const std::int64_t classes = logp.size(1);
  std::vector<double> per;
  for (std::int64_t i = 0; i < logp.size(0); ++i)
    per.push_back(-v[static_cast<std::size_t>(i * classes + target.data<std::int64_t>()[i])]);
  if (r == Reduction::none) return per;
  double total = 0;
  for (double l : per) total += l;
  return {r == Reduction::mean ? total / static_cast<double>(per.size()) : total};
}

}  // namespace

TEST_CASE("softmax: softmax and log_softmax match a naive loop along any dim", "[ops][softmax]") {
  for (const auto& c : kDims) {
    INFO(c.shape << " dim " << c.dim);
    const Tensor x = random_input(c.shape, 1, false, -3.0, 3.0);
    const int d = c.dim < 0 ? c.dim + c.shape.rank() : c.dim;
    check_close(softmax(x, c.dim), softmax_reference(values(x), c.shape, d, false), 1e-15);
    check_close(log_softmax(x, c.dim), softmax_reference(values(x), c.shape, d, true), 1e-14);
    check_close(log_softmax(x.to(DType::float32), c.dim), softmax_reference(values(x), c.shape, d, true), 1e-6);
  }
}

TEST_CASE("softmax: gradients match finite differences", "[ops][softmax][gradcheck]") {
  for (const auto& c : kDims) {
    INFO(c.shape << " dim " << c.dim);
    check_gradients([&](std::span<const Tensor> in) { return softmax(in[0], c.dim); }, {random_input(c.shape, 2)});
    check_gradients([&](std::span<const Tensor> in) { return log_softmax(in[0], c.dim); }, {random_input(c.shape, 3)});
  }
}

TEST_CASE("softmax: log_softmax of inputs around +-1e4 is finite and exact", "[ops][softmax][stability]") {
  // Each row is a small pattern plus a huge offset; log_softmax is shift-invariant, so the
  // answer is log_softmax of the pattern with the offset gone (and the mixed row's is
  // known in closed form).
  const std::vector<double> pattern = {0, 1, 2, -3, 0, 0.5, -2, 1};
  std::vector<double> x, expected;
  for (int row = 0; row < 2; ++row) {
    const double offset = row == 0 ? 1e4 : -1e4;
    std::vector<double> p(pattern.begin() + 4 * row, pattern.begin() + 4 * row + 4);
    const auto ref = softmax_reference(p, Shape{4}, 0, true);
    for (int k = 0; k < 4; ++k) {
      x.push_back(offset + p[static_cast<std::size_t>(k)]);
      expected.push_back(ref[static_cast<std::size_t>(k)]);
    }
  }
  for (double v : {-1e4, 0.0, 1e4, 1e4}) x.push_back(v);
  for (double v : {-2e4, -1e4, 0.0, 0.0}) expected.push_back(v - std::log(2.0));

  // Tolerance: four units in the last place at 1e4 (2^-10 in float32, 2^-39 in float64),
  // as precise as inputs of that size are represented.
  for (DType t : {DType::float64, DType::float32}) {
    INFO(t);
    const double tol = std::ldexp(4.0, t == DType::float64 ? -39 : -10);
    const Tensor in = from_vector<double>(x, {3, 4}).to(t).requires_grad_();
    const Tensor y = log_softmax(in, 1);
    for (double v : values(y)) CHECK(std::isfinite(v));
    const auto got = values(y);
    for (std::size_t i = 0; i < got.size(); ++i) {
      INFO("element " << i);
      CHECK(std::abs(got[i] - expected[i]) <= tol);
    }
    const Tensor s = softmax(in, 1);
    const auto sv = values(s);
    for (std::size_t i = 0; i < sv.size(); ++i) {
      CHECK(std::isfinite(sv[i]));
      CHECK(std::abs(sv[i] - std::exp(expected[i])) <= tol);
    }
    y.backward(ones_like(y));
    for (double g : values(in.grad())) CHECK(std::isfinite(g));
  }
}

TEST_CASE("nll_loss: matches minus the target class log-probability for every reduction", "[ops][loss]") {
  const Tensor logp = log_softmax(random_input({5, 7}, 4, false), 1);
  const Tensor t = targets({0, 6, 3, 3, 1});
  for (Reduction r : {Reduction::none, Reduction::mean, Reduction::sum}) {
    INFO("reduction " << static_cast<int>(r));
    const Tensor loss = nll_loss(logp, t, r);
    CHECK(loss.shape() == (r == Reduction::none ? Shape{5} : Shape{}));
    check_close(loss, nll_reference(logp, t, r), 1e-15);
  }
  CHECK(nll_loss(logp.to(DType::float32), t).item() ==
        Approx(nll_reference(logp, t, Reduction::mean)[0]).epsilon(1e-6));
}

TEST_CASE("cross_entropy: matches logsumexp of the logits minus the target logit", "[ops][loss]") {
  const Tensor x = random_input({4, 6}, 5, false, -4.0, 4.0);
  const Tensor t = targets({5, 0, 2, 2});
  const auto v = values(x);
  double total = 0;
  std::vector<double> per;
  for (std::int64_t n = 0; n < 4; ++n) {
    double lse = 0;
    for (std::int64_t k = 0; k < 6; ++k) lse += std::exp(v[static_cast<std::size_t>(n * 6 + k)]);
    per.push_back(std::log(lse) - v[static_cast<std::size_t>(n * 6 + t.data<std::int64_t>()[n])]);
    total += per.back();
  }
  check_close(cross_entropy(x, t, Reduction::none), per, 1e-14);
  check_close(cross_entropy(x, t), {total / 4}, 1e-14);
  check_close(cross_entropy(x, t, Reduction::sum), {total}, 1e-14);
}

TEST_CASE("cross_entropy with label smoothing: (1 - eps) nll + eps times the mean of -logp over classes",
          "[ops][loss]") {
  const Tensor x = random_input({3, 5}, 15, false, -4.0, 4.0);
  const Tensor t = targets({4, 0, 2});
  const auto v = values(x);
  for (double eps : {0.0, 0.1, 1.0}) {
    INFO("label_smoothing " << eps);
    double total = 0;
    std::vector<double> per;
    for (std::int64_t n = 0; n < 3; ++n) {
      double lse = 0, mean_logit = 0;
      for (std::int64_t k = 0; k < 5; ++k) {
        lse += std::exp(v[static_cast<std::size_t>(n * 5 + k)]);
        mean_logit += v[static_cast<std::size_t>(n * 5 + k)] / 5;
      }
      lse = std::log(lse);
      const double target_logit = v[static_cast<std::size_t>(n * 5 + t.data<std::int64_t>()[n])];
      per.push_back((1 - eps) * (lse - target_logit) + eps * (lse - mean_logit));
      total += per.back();
    }
    check_close(cross_entropy(x, t, Reduction::none, eps), per, 1e-14);
    check_close(cross_entropy(x, t, Reduction::mean, eps), {total / 3}, 1e-14);
    check_close(cross_entropy(x, t, Reduction::sum, eps), {total}, 1e-14);
  }
  for (Reduction r : {Reduction::none, Reduction::mean, Reduction::sum}) {
    INFO("reduction " << static_cast<int>(r));
    check_gradients([&](std::span<const Tensor> in) { return cross_entropy(in[0], t, r, 0.1); },
                    {random_input({3, 5}, 16, true, -3.0, 3.0)});
  }
  CHECK_THROWS_AS(cross_entropy(x, t, Reduction::mean, 1.5), ValueError);
  CHECK_THROWS_WITH(cross_entropy(x, t, Reduction::mean, -0.1),
                    Catch::Contains("cross_entropy: label_smoothing must be in [0, 1], got -0.1"));
}

TEST_CASE("nll_loss and cross_entropy: gradients match finite differences", "[ops][loss][gradcheck]") {
  struct Case {
    std::int64_t batch, classes;
  };
  for (const auto& c : {Case{1, 3}, Case{5, 7}, Case{4, 1}, Case{3, 2}})
    for (Reduction r : {Reduction::none, Reduction::mean, Reduction::sum}) {
      INFO("batch " << c.batch << " classes " << c.classes << " reduction " << static_cast<int>(r));
      const Tensor t = random_targets(c.batch, c.classes, 6);
      check_gradients([&](std::span<const Tensor> in) { return nll_loss(in[0], t, r); },
                      {random_input({c.batch, c.classes}, 7)});
      check_gradients([&](std::span<const Tensor> in) { return cross_entropy(in[0], t, r); },
                      {random_input({c.batch, c.classes}, 8, true, -3.0, 3.0)});
    }
}

TEST_CASE("softmax and losses: misuse throws errors that name the problem", "[ops][loss][errors]") {
  const Tensor logp = zeros({2, 3});
  CHECK_THROWS_AS(nll_loss(logp, targets({0, 1}).to(DType::int32)), TypeError);
  CHECK_THROWS_WITH(nll_loss(logp, targets({0, 1}).to(DType::int32)),
                    Catch::Contains("nll_loss") && Catch::Contains("target must be an int64 tensor, got int32"));
  CHECK_THROWS_AS(nll_loss(logp, zeros({2})), TypeError);
  CHECK_THROWS_WITH(nll_loss(logp, zeros({2})), Catch::Contains("got float32"));
  CHECK_THROWS_AS(nll_loss(logp, Tensor()), TypeError);
  CHECK_THROWS_AS(nll_loss(logp, targets({0, 3})), IndexError);
  CHECK_THROWS_WITH(nll_loss(logp, targets({0, 3})),
                    Catch::Contains("target 3 at position 1 is out of range for 3 classes"));
  CHECK_THROWS_AS(nll_loss(logp, targets({-1, 0})), IndexError);
  CHECK_THROWS_WITH(nll_loss(logp, targets({-1, 0})), Catch::Contains("target -1 at position 0"));
  CHECK_THROWS_AS(cross_entropy(logp, targets({2, 7})), IndexError);
  CHECK_THROWS_AS(nll_loss(logp, targets({0, 1, 2})), ShapeError);
  CHECK_THROWS_WITH(nll_loss(logp, targets({0, 1, 2})),
                    Catch::Contains("target has shape [3], expected [2]") && Catch::Contains("[2, 3]"));
  CHECK_THROWS_AS(nll_loss(logp, targets({0, 1}).view({2, 1})), ShapeError);
  CHECK_THROWS_AS(nll_loss(zeros({6}), targets({0})), ShapeError);
  CHECK_THROWS_WITH(nll_loss(zeros({6}), targets({0})), Catch::Contains("input of rank 2") && Catch::Contains("[6]"));
  CHECK_THROWS_AS(cross_entropy(zeros({2, 3, 4}), targets({0, 1})), ShapeError);
  CHECK_THROWS_AS(nll_loss(zeros({0, 3}), Tensor(Shape{0}, {.dtype = DType::int64})), ValueError);
  CHECK_THROWS_WITH(nll_loss(zeros({0, 3}), Tensor(Shape{0}, {.dtype = DType::int64})),
                    Catch::Contains("mean over an empty batch"));
  CHECK_THROWS_AS(nll_loss(zeros({2, 3}, {.dtype = DType::int64}), targets({0, 1})), TypeError);

  CHECK_THROWS_AS(softmax(scalar_tensor(1.0), 0), ShapeError);
  CHECK_THROWS_WITH(log_softmax(scalar_tensor(1.0), 0), Catch::Contains("log_softmax") && Catch::Contains("scalar"));
  CHECK_THROWS_AS(softmax(logp, 2), IndexError);
  CHECK_THROWS_WITH(log_softmax(logp, -3), Catch::Contains("dimension -3 out of range"));
  CHECK_THROWS_AS(softmax(zeros({3}, {.dtype = DType::int32}), 0), TypeError);
}
