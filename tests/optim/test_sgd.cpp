#include <map>

#include "optim/optim_test_util.hpp"

using namespace tinynet;
using namespace optim_test;
using optim::SGD;
using optim::SGDOptions;

namespace {

// PyTorch's SGD written out in double, one parameter tensor at a time.
struct SgdReference {
  SGDOptions o;
  std::map<int, std::vector<double>> buf;

  void update(int k, std::vector<double>& p, const std::vector<double>& grad) {
    const bool first = buf.count(k) == 0;
    if (first) buf[k].assign(p.size(), 0.0);
    for (std::size_t i = 0; i < p.size(); ++i) {
      double d = o.maximize ? -grad[i] : grad[i];
      d += o.weight_decay * p[i];
      if (o.momentum != 0) {
        double& b = buf[k][i];
        b = first ? d : o.momentum * b + (1 - o.dampening) * d;
        d = o.nesterov ? d + o.momentum * b : b;
      }
      p[i] -= o.lr * d;
    }
  }
};

// Runs SGD on f(w) = w^2 / 2 (gradient w) from w = 1 and returns w after each step.
std::vector<double> scalar_run(SGDOptions o, int steps) {
  Tensor w = full({1}, 1.0, {.dtype = DType::float64, .requires_grad = true});
  SGD opt({w}, o);
  std::vector<double> out;
  for (int s = 0; s < steps; ++s) {
    w.set_grad(w.clone());
    opt.step();
    out.push_back(w.item());
  }
  return out;
}

}  // namespace

TEST_CASE("SGD: hand-worked steps on w^2/2", "[optim][sgd]") {
  // buf = g first, then 0.9 buf + g; w -= 0.1 buf.
  check_close(scalar_run({.lr = 0.1, .momentum = 0.9}, 4), {0.9, 0.72, 0.486, 0.2268}, 1e-12, "momentum");
  // Nesterov: d = g + 0.9 buf.
  check_close(scalar_run({.lr = 0.1, .momentum = 0.9, .nesterov = true}, 2), {0.81, 0.5751}, 1e-12, "nesterov");
  // Dampening leaves the first buffer undamped: buf = 1, then 0.9 + 0.5 * 0.9.
  check_close(scalar_run({.lr = 0.1, .momentum = 0.9, .dampening = 0.5}, 2), {0.9, 0.765}, 1e-12, "dampening");
  // Weight decay: g = 1.1 w, so w shrinks by 0.89 a step.
  check_close(scalar_run({.lr = 0.1, .weight_decay = 0.1}, 2), {0.89, 0.7921}, 1e-12, "weight_decay");
  // Maximize ascends: w grows by 1.1 a step.
  check_close(scalar_run({.lr = 0.1, .maximize = true}, 2), {1.1, 1.21}, 1e-12, "maximize");
}

TEST_CASE("SGD: every option combination matches a double re-implementation", "[optim][sgd]") {
  const std::vector<std::pair<std::string, SGDOptions>> cases = {
      {"plain", {.lr = 0.1}},
      {"momentum", {.lr = 0.1, .momentum = 0.9}},
      {"momentum+dampening", {.lr = 0.1, .momentum = 0.9, .dampening = 0.3}},
      {"nesterov", {.lr = 0.05, .momentum = 0.8, .nesterov = true}},
      {"weight_decay", {.lr = 0.1, .weight_decay = 0.05}},
      {"momentum+weight_decay+dampening", {.lr = 0.1, .momentum = 0.7, .dampening = 0.2, .weight_decay = 0.1}},
      {"nesterov+weight_decay", {.lr = 0.05, .momentum = 0.9, .weight_decay = 0.1, .nesterov = true}},
      {"maximize+momentum", {.lr = 0.02, .momentum = 0.5, .maximize = true}},
  };
  for (DType dt : {DType::float64, DType::float32})
    for (const auto& [label, o] : cases) check_against_reference<SGD>(o, SgdReference{o, {}}, dt, 8, label);
}

TEST_CASE("SGD: momentum buffer is state, absent without momentum", "[optim][sgd]") {
  const LinearProblem prob;
  auto with = prob.make_params(DType::float64), without = prob.make_params(DType::float64);
  SGD a(with, {.lr = 0.1, .momentum = 0.9}), b(without, {.lr = 0.1});
  prob.backward(with);
  prob.backward(without);
  a.step();
  b.step();
  REQUIRE(a.state(with[0]) != nullptr);
  CHECK(a.state(with[0])->buffers[0].shape() == with[0].shape());
  CHECK(a.state_dict().contains("state.0.momentum_buffer"));
  CHECK(a.state_dict().contains("state.1.momentum_buffer"));
  CHECK_FALSE(b.state_dict().contains("state.0.momentum_buffer"));
}

TEST_CASE("SGD: invalid options are ValueErrors naming the option", "[optim][sgd][errors]") {
  const auto params = LinearProblem().make_params(DType::float32);
  CHECK_THROWS_WITH(SGD(params, {}), Catch::Contains("lr has no default"));
  CHECK_THROWS_AS(SGD(params, {.lr = -0.1}), ValueError);
  CHECK_THROWS_WITH(SGD(params, {.lr = -0.1}), Catch::Contains("SGD: invalid lr -0.1"));
  CHECK_THROWS_WITH(SGD(params, {.lr = 0.1, .momentum = -0.5}), Catch::Contains("invalid momentum -0.5"));
  CHECK_THROWS_WITH(SGD(params, {.lr = 0.1, .weight_decay = -1}), Catch::Contains("invalid weight_decay -1"));
  CHECK_THROWS_AS(SGD(params, {.lr = 0.1, .nesterov = true}), ValueError);
  CHECK_THROWS_WITH(SGD(params, {.lr = 0.1, .nesterov = true}), Catch::Contains("nesterov requires momentum > 0"));
  CHECK_THROWS_WITH(SGD(params, {.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .nesterov = true}),
                    Catch::Contains("dampening == 0"));
  CHECK_NOTHROW(SGD(params, {.lr = 0.0, .momentum = 0.9, .nesterov = true}));
}
