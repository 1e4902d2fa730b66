#include <functional>
#include <memory>

#include "optim/optim_test_util.hpp"

using namespace tinynet;
using namespace optim_test;
using optim::Adadelta;
using optim::Adam;
using optim::AdamW;
using optim::CosineAnnealingLR;
using optim::ParamGroup;
using optim::SGD;
using optim::StepLR;

namespace {

/// `sd` with entry `key` left out, replaced by `t`, or (absent before) added.
StateDict edited(const StateDict& sd, const std::string& key, const Tensor& t = Tensor()) {
  StateDict out;
  for (const auto& [name, v] : sd)
    if (name != key)
      out.insert(name, v);
    else if (t.defined())
      out.insert(name, t);
  if (!sd.contains(key) && t.defined()) out.insert(key, t);
  return out;
}

/// Trains `opt` (with `sched` stepped every step) on LinearProblem for `steps` steps.
void train(const LinearProblem& prob, const std::vector<Tensor>& params, optim::Optimizer& opt,
           optim::LRScheduler& sched, int steps) {
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    prob.backward(params);
    opt.step();
    sched.step();
  }
}

/// Optimizer A trains k steps; a fresh B (other hyper-parameters, fresh scheduler) loads
/// A's optimizer and scheduler state and a copy of its parameters; both train on and must
/// stay bit-identical.
template <typename Opt, typename Options>
void check_resume(DType dt, const Options& options, const Options& other, const std::string& label) {
  INFO(label << " in " << dtype_name(dt));
  const LinearProblem prob;
  const auto pa = prob.make_params(dt);
  // Two groups, so that ids and per-group options are exercised.
  Options second = options;
  second.lr = options.lr * 0.5;
  Opt a(std::vector<ParamGroup<Options>>{{{pa[0]}, options}, {{pa[1]}, second}});
  CosineAnnealingLR sa(a, 6, 1e-3);
  train(prob, pa, a, sa, 4);

  const auto pb = clone_params(pa);
  Opt b(std::vector<ParamGroup<Options>>{{{pb[0]}, other}, {{pb[1]}, other}});
  CosineAnnealingLR sb(b, 50, 0.0);
  b.load_state_dict(a.state_dict());
  sb.load_state_dict(sa.state_dict());
  CHECK(same_state(a.state_dict(), b.state_dict()));
  CHECK(same_state(sa.state_dict(), sb.state_dict()));

  for (int s = 0; s < 9; ++s) {
    train(prob, pa, a, sa, 1);
    train(prob, pb, b, sb, 1);
    CHECK(same_bits(pa[0], pb[0]));
    CHECK(same_bits(pa[1], pb[1]));
    CHECK(sa.get_last_lr() == sb.get_last_lr());
  }
  CHECK(same_state(a.state_dict(), b.state_dict()));
}

}  // namespace

TEST_CASE("state_dict: a restored optimizer and scheduler continue bit-identically", "[optim][state_dict]") {
  for (DType dt : {DType::float64, DType::float32}) {
    check_resume<SGD>(dt, optim::SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true},
                      optim::SGDOptions{.lr = 1.0}, "SGD");
    check_resume<SGD>(dt, optim::SGDOptions{.lr = 0.1, .momentum = 0.8, .dampening = 0.2},
                      optim::SGDOptions{.lr = 1.0, .momentum = 0.1}, "SGD dampening");
    check_resume<Adadelta>(dt, optim::AdadeltaOptions{.lr = 0.5, .weight_decay = 0.01}, optim::AdadeltaOptions{},
                           "Adadelta");
    check_resume<Adam>(dt, optim::AdamOptions{.lr = 0.05, .weight_decay = 0.1, .amsgrad = true}, optim::AdamOptions{},
                       "Adam");
    check_resume<AdamW>(dt, optim::AdamWOptions{.lr = 0.05, .betas = {0.8, 0.9}, .amsgrad = true},
                        optim::AdamWOptions{.lr = 1.0}, "AdamW");
  }
}

TEST_CASE("state_dict: layout follows PyTorch's, flattened", "[optim][state_dict]") {
  const LinearProblem prob;
  const auto params = prob.make_params(DType::float32);
  Adam opt(std::vector<ParamGroup<optim::AdamOptions>>{{{params[0]}, {.lr = 0.1, .amsgrad = true}},
                                                       {{params[1]}, {.betas = {0.5, 0.6}}}});
  prob.backward(params);
  opt.step();
  const StateDict sd = opt.state_dict();
  std::vector<std::string> names;
  for (const auto& [name, t] : sd) names.push_back(name);
  CHECK(names == std::vector<std::string>{"state.0.step",
                                          "state.0.exp_avg",
                                          "state.0.exp_avg_sq",
                                          "state.0.max_exp_avg_sq",
                                          "state.1.step",
                                          "state.1.exp_avg",
                                          "state.1.exp_avg_sq",
                                          "param_groups.0.params",
                                          "param_groups.0.lr",
                                          "param_groups.0.betas",
                                          "param_groups.0.eps",
                                          "param_groups.0.weight_decay",
                                          "param_groups.0.amsgrad",
                                          "param_groups.0.maximize",
                                          "param_groups.1.params",
                                          "param_groups.1.lr",
                                          "param_groups.1.betas",
                                          "param_groups.1.eps",
                                          "param_groups.1.weight_decay",
                                          "param_groups.1.amsgrad",
                                          "param_groups.1.maximize"});
  CHECK(sd.integer("state.0.step") == 1);
  CHECK(sd.at("state.0.exp_avg").shape() == params[0].shape());
  CHECK(sd.at("state.0.exp_avg").dtype() == DType::float32);
  CHECK(sd.integer("param_groups.1.params") == 1);
  CHECK(sd.scalar("param_groups.0.lr") == 0.1);
  CHECK(sd.integer("param_groups.0.amsgrad") == 1);
  CHECK(values(sd.at("param_groups.1.betas")) == std::vector<double>{0.5, 0.6});

  // A snapshot: later steps do not change it.
  const auto m = values(sd.at("state.0.exp_avg"));
  opt.step();
  CHECK(values(sd.at("state.0.exp_avg")) == m);
  CHECK(sd.integer("state.0.step") == 1);
}

TEST_CASE("state_dict: load copies the tensors and restores the hyper-parameters", "[optim][state_dict]") {
  const LinearProblem prob;
  const auto pa = prob.make_params(DType::float64), pb = clone_params(pa);
  SGD a(pa, {.lr = 0.3, .momentum = 0.9});
  prob.backward(pa);
  a.step();
  StateDict sd = a.state_dict();
  SGD b(pb, {.lr = 1.0});
  b.load_state_dict(sd);
  CHECK(b.lr(0) == 0.3);
  CHECK(b.param_groups()[0].options.momentum == 0.9);
  REQUIRE(b.state(pb[0]) != nullptr);
  CHECK_FALSE(b.state(pb[0])->buffers[0].shares_storage(sd.at("state.0.momentum_buffer")));
  // A float32 state loads into float64 parameters converted, as PyTorch casts state.
  StateDict sd32 = edited(sd, "state.1.momentum_buffer", sd.at("state.1.momentum_buffer").to(DType::float32));
  b.load_state_dict(sd32);
  CHECK(b.state(pb[1])->buffers[0].dtype() == DType::float64);
  // Loading an empty state clears it.
  SGD c(clone_params(pa), {.lr = 0.3, .momentum = 0.9});
  b.load_state_dict(c.state_dict());
  CHECK(b.state(pb[0]) == nullptr);
}

TEST_CASE("state_dict: every mismatch on load is an error naming the entry", "[optim][state_dict][errors]") {
  const LinearProblem prob;
  const auto params = prob.make_params(DType::float32);
  Adam opt(std::vector<ParamGroup<optim::AdamOptions>>{{{params[0]}, {.amsgrad = true}}, {{params[1]}, {}}});
  prob.backward(params);
  opt.step();
  const StateDict good = opt.state_dict();
  const StateDict before = opt.state_dict();
  auto fails = [&](const StateDict& sd, const std::string& text) {
    INFO("expecting: " << text);
    CHECK_THROWS_WITH(opt.load_state_dict(sd), Catch::Contains("Adam.load_state_dict") && Catch::Contains(text));
    CHECK(same_state(opt.state_dict(), before));  // unchanged
  };
  const Tensor one = scalar_tensor(1.0, {.dtype = DType::float64});

  SECTION("unknown entries") {
    fails(edited(good, "momentum", one), "unknown entry 'momentum'");
    fails(edited(good, "param_groups.0.momentum", one), "unknown entry 'param_groups.0.momentum'");
    fails(edited(good, "state.0.momentum_buffer", zeros(params[0].shape())), "unknown entry 'state.0.momentum_buffer'");
    fails(edited(good, "state.x.step", one), "unknown entry 'state.x.step'");
    fails(edited(good, "param_groups.00.lr", one), "unknown entry 'param_groups.00.lr'");
    fails(edited(good, "state.0", one), "unknown entry 'state.0'");
    CHECK_THROWS_AS(opt.load_state_dict(edited(good, "extra", one)), ValueError);
  }
  SECTION("missing entries") {
    fails(edited(good, "param_groups.0.lr"), "missing entry 'param_groups.0.lr'");
    fails(edited(good, "param_groups.1.betas"), "missing entry 'param_groups.1.betas'");
    fails(edited(good, "param_groups.1.params"), "missing entry 'param_groups.1.params'");
    fails(edited(good, "state.1.exp_avg_sq"), "missing entry 'state.1.exp_avg_sq'");
    fails(edited(good, "state.0.step"), "missing entry 'state.0.step'");
    // amsgrad in group 0 needs the running maximum.
    fails(edited(good, "state.0.max_exp_avg_sq"), "missing entry 'state.0.max_exp_avg_sq'");
    CHECK_THROWS_AS(opt.load_state_dict(edited(good, "param_groups.0.lr")), ValueError);
  }
  SECTION("wrong shapes and dtypes") {
    fails(edited(good, "state.0.exp_avg", zeros({3, 2})), "entry 'state.0.exp_avg' has shape [3, 2]");
    CHECK_THROWS_AS(opt.load_state_dict(edited(good, "state.0.exp_avg", zeros({3, 2}))), ShapeError);
    fails(edited(good, "state.0.exp_avg", zeros({2, 3}, {.dtype = DType::int64})), "entry 'state.0.exp_avg' is int64");
    fails(edited(good, "param_groups.0.lr", scalar_tensor(1.0, {.dtype = DType::int64})),
          "entry 'param_groups.0.lr' is int64, expected float64");
    CHECK_THROWS_AS(opt.load_state_dict(edited(good, "param_groups.0.lr", scalar_tensor(1, {.dtype = DType::int64}))),
                    TypeError);
    fails(edited(good, "param_groups.0.betas", zeros({3}, {.dtype = DType::float64})),
          "entry 'param_groups.0.betas' has shape [3], expected [2]");
    fails(edited(good, "state.1.step", scalar_tensor(1.0, {.dtype = DType::float64})),
          "entry 'state.1.step' is float64");
    fails(edited(good, "param_groups.0.amsgrad", scalar_tensor(2, {.dtype = DType::int64})),
          "entry 'param_groups.0.amsgrad' must be 0 or 1");
  }
  SECTION("different numbers of parameters and groups") {
    fails(edited(good, "param_groups.1.params", arange(3)),
          "parameter group 1 has 3 parameters in the state_dict ('param_groups.1.params'), 1 in the optimizer");
    Adam one_group(params);
    fails(one_group.state_dict(), "the state_dict has 1 parameter groups, the optimizer has 2");
    fails(edited(good, "state.7.step", scalar_tensor(1, {.dtype = DType::int64})),
          "entry 'state.7.step' is state of parameter 7, which no parameter group lists");
    fails(edited(good, "param_groups.1.params", from_vector<std::int64_t>({0}, {1})), "parameter id 0 appears more");
  }
  SECTION("invalid values and other optimizers' state") {
    fails(edited(good, "param_groups.1.lr", scalar_tensor(-1.0, {.dtype = DType::float64})), "Adam: invalid lr -1");
    SGD sgd({params[0].clone().requires_grad_(), params[1].clone().requires_grad_()}, {.lr = 0.1});
    StateDict two_groups = sgd.state_dict();
    CHECK_THROWS_AS(opt.load_state_dict(two_groups), ValueError);
  }
}
