#include <algorithm>
#include <map>

#include "optim/optim_test_util.hpp"

using namespace tinynet;
using namespace optim_test;
using optim::Adam;
using optim::AdamOptions;
using optim::AdamW;
using optim::AdamWOptions;

namespace {

// PyTorch's Adam / AdamW written out in double.
template <typename Options>
struct AdamReference {
  Options o;
  bool decoupled = false;
  std::map<int, std::vector<double>> m, v, vmax;
  std::map<int, int> steps;

  void update(int k, std::vector<double>& p, const std::vector<double>& grad) {
    m[k].resize(p.size(), 0.0);
    v[k].resize(p.size(), 0.0);
    vmax[k].resize(p.size(), 0.0);
    const int t = ++steps[k];
    const double b1 = o.betas[0], b2 = o.betas[1];
    const double bc1 = 1 - std::pow(b1, t), bc2 = 1 - std::pow(b2, t);
    for (std::size_t i = 0; i < p.size(); ++i) {
      double g = o.maximize ? -grad[i] : grad[i];
      if (decoupled)
        p[i] *= 1 - o.lr * o.weight_decay;
      else
        g += o.weight_decay * p[i];
      m[k][i] = b1 * m[k][i] + (1 - b1) * g;
      v[k][i] = b2 * v[k][i] + (1 - b2) * g * g;
      vmax[k][i] = std::max(vmax[k][i], v[k][i]);
      const double vhat = o.amsgrad ? vmax[k][i] : v[k][i];
      p[i] -= o.lr / bc1 * m[k][i] / (std::sqrt(vhat) / std::sqrt(bc2) + o.eps);
    }
  }
};

}  // namespace

TEST_CASE("Adam, AdamW: defaults are PyTorch's", "[optim][adam]") {
  const AdamOptions a;
  CHECK(a.lr == 1e-3);
  CHECK(a.betas[0] == 0.9);
  CHECK(a.betas[1] == 0.999);
  CHECK(a.eps == 1e-8);
  CHECK(a.weight_decay == 0.0);
  CHECK_FALSE(a.amsgrad);
  const AdamWOptions w;
  CHECK(w.lr == 1e-3);
  CHECK(w.betas[0] == 0.9);
  CHECK(w.betas[1] == 0.999);
  CHECK(w.eps == 1e-8);
  CHECK(w.weight_decay == 1e-2);
  CHECK_FALSE(w.amsgrad);
}

TEST_CASE("Adam, AdamW: first two steps in closed form", "[optim][adam]") {
  // Bias correction makes step 1 p -= lr g / (|g| + eps), and step 2
  // p -= lr (b1 g1 + g2) / (1 + b1) / (sqrt((b2 g1^2 + g2^2) / (1 + b2)) + eps).
  const double lr = 0.1, b1 = 0.8, b2 = 0.9, eps = 1e-3, wd = 0.2, g1 = 2.0, g2 = -0.5, w0 = 1.5;
  auto step2 = [&](double w, double wd_factor) {
    return w * wd_factor - lr * (b1 * g1 + g2) / (1 + b1) / (std::sqrt((b2 * g1 * g1 + g2 * g2) / (1 + b2)) + eps);
  };
  auto run = [&](auto&& opt, Tensor& w) {
    w.set_grad(full({1}, g1, {.dtype = DType::float64}));
    opt.step();
    const double after1 = w.item();
    w.set_grad(full({1}, g2, {.dtype = DType::float64}));
    opt.step();
    return std::pair{after1, w.item()};
  };
  SECTION("Adam (no weight decay)") {
    Tensor w = full({1}, w0, {.dtype = DType::float64, .requires_grad = true});
    const auto [s1, s2] = run(Adam({w}, {.lr = lr, .betas = {b1, b2}, .eps = eps}), w);
    const double e1 = w0 - lr * g1 / (std::abs(g1) + eps);
    CHECK(std::abs(s1 - e1) <= 1e-12);
    CHECK(std::abs(s2 - step2(e1, 1.0)) <= 1e-12);
  }
  SECTION("AdamW shrinks p by 1 - lr wd before the Adam step") {
    Tensor w = full({1}, w0, {.dtype = DType::float64, .requires_grad = true});
    const auto [s1, s2] = run(AdamW({w}, {.lr = lr, .betas = {b1, b2}, .eps = eps, .weight_decay = wd}), w);
    const double e1 = w0 * (1 - lr * wd) - lr * g1 / (std::abs(g1) + eps);
    CHECK(std::abs(s1 - e1) <= 1e-12);
    CHECK(std::abs(s2 - step2(e1, 1 - lr * wd)) <= 1e-12);
  }
}

TEST_CASE("Adam: every option combination matches a double re-implementation", "[optim][adam]") {
  const std::vector<std::pair<std::string, AdamOptions>> cases = {
      {"defaults", {}},
      {"lr+betas+eps", {.lr = 0.05, .betas = {0.8, 0.95}, .eps = 1e-4}},
      {"weight_decay", {.lr = 0.05, .weight_decay = 0.1}},
      {"amsgrad", {.lr = 0.2, .betas = {0.5, 0.6}, .amsgrad = true}},
      {"amsgrad+weight_decay", {.lr = 0.2, .betas = {0.5, 0.6}, .weight_decay = 0.3, .amsgrad = true}},
      {"maximize", {.lr = 0.01, .maximize = true}},
  };
  for (DType dt : {DType::float64, DType::float32})
    for (const auto& [label, o] : cases)
      check_against_reference<Adam>(o, AdamReference<AdamOptions>{o, false, {}, {}, {}, {}}, dt, 8, label);
}

TEST_CASE("AdamW: every option combination matches a double re-implementation", "[optim][adam]") {
  const std::vector<std::pair<std::string, AdamWOptions>> cases = {
      {"defaults", {}},
      {"weight_decay", {.lr = 0.05, .weight_decay = 0.5}},
      {"no weight_decay", {.lr = 0.05, .weight_decay = 0.0}},
      {"amsgrad+weight_decay", {.lr = 0.2, .betas = {0.5, 0.6}, .weight_decay = 0.3, .amsgrad = true}},
      {"maximize", {.lr = 0.01, .weight_decay = 0.1, .maximize = true}},
  };
  for (DType dt : {DType::float64, DType::float32})
    for (const auto& [label, o] : cases)
      check_against_reference<AdamW>(o, AdamReference<AdamWOptions>{o, true, {}, {}, {}, {}}, dt, 8, label);
}

TEST_CASE("Adam: the amsgrad case exercises the running maximum", "[optim][adam]") {
  // The comparison above covers amsgrad only if v actually fell below its maximum.
  const LinearProblem prob;
  const auto params = prob.make_params(DType::float64);
  Adam opt(params, {.lr = 0.2, .betas = {0.5, 0.6}, .amsgrad = true});
  for (int s = 0; s < 8; ++s) {
    prob.backward(params);
    opt.step();
  }
  const optim::ParamState* st = opt.state(params[0]);
  REQUIRE(st != nullptr);
  CHECK(st->step == 8);
  const auto v = values(st->buffers[1]), vmax = values(st->buffers[2]);
  int below = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    CHECK(vmax[i] >= v[i]);
    below += vmax[i] > v[i];
  }
  CHECK(below > 0);
}

TEST_CASE("Adam: AdamW differs from Adam with the same weight decay", "[optim][adam]") {
  const LinearProblem prob;
  const auto a = prob.make_params(DType::float64), b = prob.make_params(DType::float64);
  Adam adam(a, {.lr = 0.05, .weight_decay = 0.5});
  AdamW adamw(b, {.lr = 0.05, .weight_decay = 0.5});
  for (int s = 0; s < 3; ++s) {
    prob.backward(a);
    prob.backward(b);
    adam.step();
    adamw.step();
  }
  CHECK_FALSE(same_bits(a[0], b[0]));
}

TEST_CASE("Adam, AdamW: invalid options are ValueErrors naming the option", "[optim][adam][errors]") {
  const auto params = LinearProblem().make_params(DType::float32);
  CHECK_THROWS_AS(Adam(params, {.lr = -1e-3}), ValueError);
  CHECK_THROWS_WITH(Adam(params, {.lr = -1e-3}), Catch::Contains("Adam: invalid lr -0.001"));
  CHECK_THROWS_WITH(Adam(params, {.betas = {1.0, 0.999}}), Catch::Contains("invalid betas[0] 1"));
  CHECK_THROWS_WITH(Adam(params, {.betas = {-0.1, 0.999}}), Catch::Contains("invalid betas[0] -0.1"));
  CHECK_THROWS_WITH(Adam(params, {.betas = {0.9, 1.0}}), Catch::Contains("invalid betas[1] 1"));
  CHECK_THROWS_WITH(Adam(params, {.eps = -1e-8}), Catch::Contains("invalid eps"));
  CHECK_THROWS_WITH(Adam(params, {.weight_decay = -0.1}), Catch::Contains("invalid weight_decay -0.1"));
  CHECK_THROWS_WITH(AdamW(params, {.lr = -1}), Catch::Contains("AdamW: invalid lr -1"));
  CHECK_THROWS_WITH(AdamW(params, {.betas = {0.9, 1.5}}), Catch::Contains("AdamW: invalid betas[1] 1.5"));
  CHECK_NOTHROW(Adam(params, {.betas = {0.0, 0.0}}));
}
