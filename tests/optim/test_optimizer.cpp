#include "optim/optim_test_util.hpp"

using namespace tinynet;
using namespace optim_test;
using optim::Adadelta;
using optim::Adam;
using optim::AdamW;
using optim::ParamGroup;
using optim::SGD;
using optim::SGDOptions;

TEST_CASE("optimizer: parameter groups have their own options and settable lr", "[optim][groups]") {
  const LinearProblem prob;
  const auto params = prob.make_params(DType::float64);
  const auto w0 = values(params[0]), b0 = values(params[1]);
  SGD opt({{{params[0]}, {.lr = 0.1}}, {{params[1]}, {.lr = 0.01, .momentum = 0.9}}});
  REQUIRE(opt.num_param_groups() == 2);
  CHECK(opt.lr(0) == 0.1);
  CHECK(opt.lr(1) == 0.01);
  CHECK(opt.param_groups()[1].options.momentum == 0.9);

  prob.backward(params);
  const auto gw = values(params[0].grad()), gb = values(params[1].grad());
  opt.step();
  std::vector<double> w = w0, b = b0;
  for (std::size_t i = 0; i < w.size(); ++i) w[i] -= 0.1 * gw[i];
  for (std::size_t i = 0; i < b.size(); ++i) b[i] -= 0.01 * gb[i];
  check_close(values(params[0]), w, 1e-15, "W");
  check_close(values(params[1]), b, 1e-15, "b");

  // Both ways of changing lr take effect at the next step; the same gradients are reused.
  opt.param_groups()[0].options.lr = 0.2;
  opt.set_lr(1, 0.5);
  CHECK(opt.lr(0) == 0.2);
  CHECK(opt.lr(1) == 0.5);
  opt.step();
  for (std::size_t i = 0; i < w.size(); ++i) w[i] -= 0.2 * gw[i];
  for (std::size_t i = 0; i < b.size(); ++i) b[i] -= 0.5 * (0.9 * gb[i] + gb[i]);
  check_close(values(params[0]), w, 1e-15, "W after set lr");
  check_close(values(params[1]), b, 1e-15, "b after set lr");

  CHECK_THROWS_AS(opt.lr(2), IndexError);
  CHECK_THROWS_WITH(opt.set_lr(2, 0.1), Catch::Contains("parameter group 2 out of range (2 groups)"));
}

TEST_CASE("optimizer: add_param_group adds parameters and rejects duplicates", "[optim][groups][errors]") {
  Tensor a = ones({2}, {.requires_grad = true}), b = ones({3}, {.requires_grad = true});
  SGD opt({a}, {.lr = 1.0});
  opt.add_param_group({{b}, {.lr = 0.5}});
  REQUIRE(opt.num_param_groups() == 2);
  b.set_grad(ones({3}));
  opt.step();
  CHECK(b.at<float>({2}) == 0.5f);
  CHECK(a.at<float>({0}) == 1.0f);  // no grad: skipped
  CHECK_THROWS_AS(opt.add_param_group({{a}, {.lr = 0.1}}), ValueError);
  CHECK_THROWS_WITH(opt.add_param_group({{a}, {.lr = 0.1}}), Catch::Contains("appears more than once"));
  CHECK_THROWS_WITH(opt.add_param_group({{ones({1}, {.requires_grad = true})}, {.lr = -1.0}}),
                    Catch::Contains("invalid lr -1"));
  CHECK(opt.num_param_groups() == 2);
}

TEST_CASE("optimizer: parameters without a gradient are skipped and get no state", "[optim]") {
  Tensor a = full({2}, 1.0, {.dtype = DType::float64, .requires_grad = true});
  Tensor b = full({2}, 1.0, {.dtype = DType::float64, .requires_grad = true});
  Adam opt({a, b}, {.lr = 0.1, .weight_decay = 0.1});
  a.set_grad(full({2}, 1.0, {.dtype = DType::float64}));
  opt.step();
  opt.step();
  CHECK(a.at<double>({0}) < 1.0);
  CHECK(b.at<double>({0}) == 1.0);
  CHECK(b.at<double>({1}) == 1.0);
  REQUIRE(opt.state(a) != nullptr);
  CHECK(opt.state(a)->step == 2);
  CHECK(opt.state(b) == nullptr);
  const StateDict sd = opt.state_dict();
  CHECK(sd.contains("state.0.step"));
  CHECK_FALSE(sd.contains("state.1.step"));
  CHECK_FALSE(sd.contains("state.1.exp_avg"));
}

TEST_CASE("optimizer: zero_grad resets the handle or fills zeros in place", "[optim]") {
  const LinearProblem prob;
  const auto params = prob.make_params(DType::float32);
  SGD opt(params, {.lr = 0.1});
  prob.backward(params);
  const Tensor g = params[0].grad();
  opt.zero_grad(false);
  REQUIRE(params[0].grad().defined());
  CHECK(params[0].grad().is_same(g));
  for (double v : values(params[0].grad())) CHECK(v == 0.0);
  for (double v : values(params[1].grad())) CHECK(v == 0.0);
  opt.zero_grad();
  CHECK_FALSE(params[0].grad().defined());
  CHECK_FALSE(params[1].grad().defined());
  opt.zero_grad(false);  // nothing to fill
  CHECK_FALSE(params[0].grad().defined());
}

TEST_CASE("optimizer: step updates the shared handles in place, leaves gradients and the tape alone", "[optim]") {
  const LinearProblem prob;
  const auto params = prob.make_params(DType::float64);
  const Tensor model_w = params[0];  // the model's own handle
  const void* storage = model_w.raw_data();
  SGD sgd(params, {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.1, .maximize = true});
  prob.backward(params);
  const auto g = values(params[0].grad());
  const auto before = values(model_w);
  sgd.step();
  CHECK(model_w.raw_data() == storage);
  CHECK(values(model_w) != before);
  CHECK(values(params[0].grad()) == g);
  CHECK(model_w.is_leaf());
  CHECK(model_w.requires_grad());
  CHECK(GradMode::is_enabled());
}

TEST_CASE("optimizer: steady-state steps allocate nothing", "[optim][memory]") {
  // Large enough that the kernels take the parallel path.
  const Shape big{300, 350};
  auto make = [&] {
    std::vector<Tensor> ps{randn(big, {.requires_grad = true}), randn({7}, {.requires_grad = true})};
    for (Tensor& p : ps) p.set_grad(randn(p.shape()));
    return ps;
  };
  auto check = [&](optim::Optimizer& opt, const char* label) {
    INFO(label);
    opt.step();  // creates the state
    const AllocatorStats before = cpu_allocator().stats();
    for (int s = 0; s < 5; ++s) {
      opt.step();
      opt.zero_grad(false);
    }
    const AllocatorStats after = cpu_allocator().stats();
    CHECK(after.requests == before.requests);
    CHECK(after.system_allocs == before.system_allocs);
  };
  const auto p1 = make(), p2 = make(), p3 = make(), p4 = make();
  SGD sgd(p1, {.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-4, .nesterov = true});
  Adadelta adadelta(p2, {.weight_decay = 1e-4});
  Adam adam(p3, {.amsgrad = true});
  AdamW adamw(p4, {.amsgrad = true});
  check(sgd, "SGD");
  check(adadelta, "Adadelta");
  check(adam, "Adam");
  check(adamw, "AdamW");
}

TEST_CASE("optimizer: the parallel path matches the elementwise rule", "[optim]") {
  const std::int64_t n = 100003;
  Tensor p = randn({n}, {.dtype = DType::float64, .requires_grad = true});
  const Tensor g = randn({n}, {.dtype = DType::float64});
  const auto p0 = values(p), gv = values(g);
  p.set_grad(g);
  SGD opt({p}, {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01});
  opt.step();
  opt.step();
  std::vector<double> expected(p0.size());
  for (std::size_t i = 0; i < p0.size(); ++i) {
    const double d1 = gv[i] + 0.01 * p0[i], w1 = p0[i] - 0.1 * d1;
    const double d2 = gv[i] + 0.01 * w1, buf = 0.9 * d1 + d2;
    expected[i] = w1 - 0.1 * buf;
  }
  check_close(values(p), expected, 1e-12, "p");
}

TEST_CASE("optimizer: bad parameters and gradients are clear errors", "[optim][errors]") {
  Tensor w = ones({2, 2}, {.requires_grad = true});
  CHECK_THROWS_AS(SGD(std::vector<Tensor>{}, {.lr = 0.1}), ValueError);
  CHECK_THROWS_WITH(SGD(std::vector<Tensor>{}, {.lr = 0.1}), Catch::Contains("empty parameter list"));
  CHECK_THROWS_WITH(SGD({w * 2.0}, {.lr = 0.1}), Catch::Contains("not a leaf"));
  CHECK_THROWS_AS(SGD({zeros({2}, {.dtype = DType::int64})}, {.lr = 0.1}), TypeError);
  CHECK_THROWS_WITH(SGD({Tensor()}, {.lr = 0.1}), Catch::Contains("undefined tensor"));
  CHECK_THROWS_WITH(SGD({w, w}, {.lr = 0.1}), Catch::Contains("appears more than once"));
  CHECK_THROWS_WITH(SGD(std::vector<ParamGroup<SGDOptions>>{}), Catch::Contains("no parameter groups"));

  SGD opt({w}, {.lr = 0.1});
  w.set_grad(ones({4}));
  CHECK_THROWS_AS(opt.step(), ShapeError);
  CHECK_THROWS_WITH(opt.step(), Catch::Contains("gradient has shape [4]") && Catch::Contains("[2, 2]"));
  w.set_grad(ones({2, 2}, {.dtype = DType::float64}));
  CHECK_THROWS_AS(opt.step(), TypeError);
  CHECK_THROWS_WITH(opt.step(), Catch::Contains("gradient is float64") && Catch::Contains("float32"));
}
