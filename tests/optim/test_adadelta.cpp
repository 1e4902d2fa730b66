#include <map>

#include "optim/optim_test_util.hpp"

using namespace tinynet;
using namespace optim_test;
using optim::Adadelta;
using optim::AdadeltaOptions;

namespace {

// PyTorch's Adadelta written out in double.
struct AdadeltaReference {
  AdadeltaOptions o;
  std::map<int, std::vector<double>> square_avg, acc_delta;

  void update(int k, std::vector<double>& p, const std::vector<double>& grad) {
    auto& v = square_avg[k];
    auto& u = acc_delta[k];
    v.resize(p.size(), 0.0);
    u.resize(p.size(), 0.0);
    for (std::size_t i = 0; i < p.size(); ++i) {
      const double g = (o.maximize ? -grad[i] : grad[i]) + o.weight_decay * p[i];
      v[i] = o.rho * v[i] + (1 - o.rho) * g * g;
      const double delta = std::sqrt(u[i] + o.eps) / std::sqrt(v[i] + o.eps) * g;
      u[i] = o.rho * u[i] + (1 - o.rho) * delta * delta;
      p[i] -= o.lr * delta;
    }
  }
};

}  // namespace

TEST_CASE("Adadelta: defaults are PyTorch's", "[optim][adadelta]") {
  const AdadeltaOptions o;
  CHECK(o.lr == 1.0);
  CHECK(o.rho == 0.9);
  CHECK(o.eps == 1e-6);
  CHECK(o.weight_decay == 0.0);
  CHECK_FALSE(o.maximize);
}

TEST_CASE("Adadelta: first two steps in closed form", "[optim][adadelta]") {
  // With gradients g1, g2 from zero state:
  //   v1 = (1-rho) g1^2, d1 = sqrt(eps) / sqrt(v1 + eps) g1, u1 = (1-rho) d1^2,
  //   v2 = rho v1 + (1-rho) g2^2, d2 = sqrt(u1 + eps) / sqrt(v2 + eps) g2.
  const double lr = 0.5, rho = 0.8, eps = 1e-4, g1 = 3.0, g2 = -0.5;
  Tensor w = full({1}, 2.0, {.dtype = DType::float64, .requires_grad = true});
  Adadelta opt({w}, {.lr = lr, .rho = rho, .eps = eps});
  w.set_grad(full({1}, g1, {.dtype = DType::float64}));
  opt.step();
  const double v1 = (1 - rho) * g1 * g1, d1 = std::sqrt(eps) / std::sqrt(v1 + eps) * g1;
  CHECK(std::abs(w.item() - (2.0 - lr * d1)) <= 1e-12);
  w.set_grad(full({1}, g2, {.dtype = DType::float64}));
  opt.step();
  const double u1 = (1 - rho) * d1 * d1, v2 = rho * v1 + (1 - rho) * g2 * g2;
  const double d2 = std::sqrt(u1 + eps) / std::sqrt(v2 + eps) * g2;
  CHECK(std::abs(w.item() - (2.0 - lr * d1 - lr * d2)) <= 1e-12);
  REQUIRE(opt.state(w) != nullptr);
  CHECK(opt.state(w)->step == 2);
  CHECK(std::abs(opt.state(w)->buffers[0].item() - v2) <= 1e-12);
  CHECK(std::abs(opt.state(w)->buffers[1].item() - (rho * u1 + (1 - rho) * d2 * d2)) <= 1e-12);
}

TEST_CASE("Adadelta: every option combination matches a double re-implementation", "[optim][adadelta]") {
  const std::vector<std::pair<std::string, AdadeltaOptions>> cases = {
      {"defaults", {}},
      {"lr+rho+eps", {.lr = 0.5, .rho = 0.7, .eps = 1e-3}},
      {"weight_decay", {.lr = 2.0, .weight_decay = 0.1}},
      {"maximize+weight_decay", {.rho = 0.95, .weight_decay = 0.05, .maximize = true}},
  };
  for (DType dt : {DType::float64, DType::float32})
    for (const auto& [label, o] : cases)
      check_against_reference<Adadelta>(o, AdadeltaReference{o, {}, {}}, dt, 8, label);
}

TEST_CASE("Adadelta: invalid options are ValueErrors naming the option", "[optim][adadelta][errors]") {
  const auto params = LinearProblem().make_params(DType::float32);
  CHECK_THROWS_AS(Adadelta(params, {.lr = -1}), ValueError);
  CHECK_THROWS_WITH(Adadelta(params, {.lr = -1}), Catch::Contains("Adadelta: invalid lr -1"));
  CHECK_THROWS_WITH(Adadelta(params, {.rho = 1.5}), Catch::Contains("invalid rho 1.5"));
  CHECK_THROWS_WITH(Adadelta(params, {.rho = -0.1}), Catch::Contains("invalid rho -0.1"));
  CHECK_THROWS_WITH(Adadelta(params, {.eps = -1e-6}), Catch::Contains("invalid eps"));
  CHECK_THROWS_WITH(Adadelta(params, {.weight_decay = -0.5}), Catch::Contains("invalid weight_decay -0.5"));
  CHECK_NOTHROW(Adadelta(params, {.rho = 1.0}));
  CHECK_NOTHROW(Adadelta(params, {.rho = 0.0}));
}
