#include <algorithm>
#include <numbers>

#include "optim/optim_test_util.hpp"

using namespace tinynet;
using namespace optim_test;
using optim::CosineAnnealingLR;
using optim::ExponentialLR;
using optim::MultiStepLR;
using optim::ParamGroup;
using optim::SGD;
using optim::SGDOptions;
using optim::StepLR;

namespace {

/// An SGD with two groups whose lrs are 0.1 and 0.03.
struct TwoGroups {
  Tensor a = ones({2}, {.requires_grad = true}), b = ones({3}, {.requires_grad = true});
  SGD opt{std::vector<ParamGroup<SGDOptions>>{{{a}, {.lr = 0.1}}, {{b}, {.lr = 0.03}}}};
};

/// Steps `sched` for `epochs` epochs and checks, at epoch 0 and after every step, that
/// both the optimizer's lrs and get_last_lr() equal closed_form(base_lr, epoch) within
/// `tol` (relative).
template <typename ClosedForm>
void check_schedule(optim::LRScheduler& sched, optim::Optimizer& opt, int epochs, double tol, ClosedForm closed_form) {
  const std::vector<double> base = {0.1, 0.03};
  CHECK(sched.base_lrs() == base);
  for (int e = 0; e <= epochs; ++e) {
    if (e > 0) sched.step();
    INFO("epoch " << e);
    CHECK(sched.last_epoch() == e);
    REQUIRE(sched.get_last_lr().size() == 2);
    std::vector<double> expected, actual;
    for (std::size_t g = 0; g < 2; ++g) {
      expected.push_back(closed_form(base[g], e));
      actual.push_back(opt.lr(g));
      CHECK(sched.get_last_lr()[g] == opt.lr(g));
    }
    check_close(actual, expected, tol, "lr");
  }
}

}  // namespace

TEST_CASE("StepLR: lr = base gamma^floor(epoch / step_size)", "[optim][scheduler]") {
  TwoGroups m;
  StepLR sched(m.opt, 3, 0.5);
  check_schedule(sched, m.opt, 20, 1e-15, [](double base, int e) { return base * std::pow(0.5, e / 3); });
}

TEST_CASE("MultiStepLR: lr = base gamma^(milestones passed), repeated milestones count twice", "[optim][scheduler]") {
  TwoGroups m;
  const std::vector<std::int64_t> milestones = {7, 3, 12, 3};
  MultiStepLR sched(m.opt, milestones, 0.1);
  CHECK(sched.milestones() == std::vector<std::int64_t>{3, 3, 7, 12});
  check_schedule(sched, m.opt, 20, 1e-14, [&](double base, int e) {
    const auto passed = std::count_if(milestones.begin(), milestones.end(), [&](std::int64_t x) { return x <= e; });
    return base * std::pow(0.1, static_cast<double>(passed));
  });
}

TEST_CASE("ExponentialLR: lr = base gamma^epoch", "[optim][scheduler]") {
  TwoGroups m;
  ExponentialLR sched(m.opt, 0.9);
  check_schedule(sched, m.opt, 30, 1e-13, [](double base, int e) { return base * std::pow(0.9, e); });
}

TEST_CASE("CosineAnnealingLR: matches the closed form over several periods", "[optim][scheduler]") {
  // PyTorch 1.13's recursive form against _get_closed_form_lr, past T_max into later periods.
  for (const auto& [t_max, eta_min] : std::vector<std::pair<int, double>>{{10, 0.0}, {10, 1e-3}, {7, 0.01}, {1, 0.0}}) {
    INFO("T_max " << t_max << ", eta_min " << eta_min);
    TwoGroups m;
    CosineAnnealingLR sched(m.opt, t_max, eta_min);
    check_schedule(sched, m.opt, 5 * t_max + 3, 1e-12, [&](double base, int e) {
      return eta_min + (base - eta_min) * (1 + std::cos(std::numbers::pi * e / t_max)) / 2;
    });
  }
}

TEST_CASE("schedulers: updates are chainable, like PyTorch's", "[optim][scheduler]") {
  TwoGroups m;
  ExponentialLR sched(m.opt, 0.5);
  sched.step();
  m.opt.set_lr(0, 1.0);  // set by hand: the schedule carries on from it
  sched.step();
  CHECK(m.opt.lr(0) == 0.5);
  CHECK(m.opt.lr(1) == 0.03 * 0.25);
  // Two schedulers on one optimizer compose.
  TwoGroups n;
  StepLR s1(n.opt, 2, 0.1);
  ExponentialLR s2(n.opt, 0.5);
  for (int e = 0; e < 4; ++e) {
    s1.step();
    s2.step();
  }
  check_close({n.opt.lr(0)}, {0.1 * 0.01 * 0.0625}, 1e-15, "composed");
}

TEST_CASE("schedulers: state_dict round trip continues identically", "[optim][scheduler][state_dict]") {
  auto check = [](auto make, const char* label) {
    INFO(label);
    TwoGroups a, b;
    auto sa = make(a.opt, 0);
    for (int e = 0; e < 7; ++e) sa->step();
    auto sb = make(b.opt, 1);  // other hyper-parameters: load restores them
    b.opt.load_state_dict(a.opt.state_dict());
    sb->load_state_dict(sa->state_dict());
    CHECK(sb->last_epoch() == 7);
    CHECK(sb->base_lrs() == sa->base_lrs());
    CHECK(sb->get_last_lr() == sa->get_last_lr());
    for (int e = 0; e < 25; ++e) {
      sa->step();
      sb->step();
      CHECK(sb->get_last_lr() == sa->get_last_lr());
      CHECK(b.opt.lr(0) == a.opt.lr(0));
      CHECK(b.opt.lr(1) == a.opt.lr(1));
    }
    CHECK(same_state(sa->state_dict(), sb->state_dict()));
  };
  check([](SGD& o, int v) { return std::make_unique<StepLR>(o, 3 + v, 0.5 + 0.1 * v); }, "StepLR");
  check(
      [](SGD& o, int v) {
        return std::make_unique<MultiStepLR>(o, std::vector<std::int64_t>{2, 9 + v, 9}, 0.3);
      },
      "MultiStepLR");
  check([](SGD& o, int v) { return std::make_unique<ExponentialLR>(o, 0.9 - 0.2 * v); }, "ExponentialLR");
  check([](SGD& o, int v) { return std::make_unique<CosineAnnealingLR>(o, 5 + 3 * v, 1e-3 * (1 - v)); },
        "CosineAnnealingLR");

  TwoGroups m;
  const StateDict sd = StepLR(m.opt, 3, 0.5).state_dict();
  CHECK(sd.integer("last_epoch") == 0);
  CHECK(sd.integer("step_size") == 3);
  CHECK(sd.scalar("gamma") == 0.5);
  CHECK(values(sd.at("base_lrs")) == std::vector<double>{0.1, 0.03});
  CHECK(values(sd.at("last_lr")) == std::vector<double>{0.1, 0.03});
}

TEST_CASE("schedulers: bad arguments and state_dict mismatches are clear errors", "[optim][scheduler][errors]") {
  TwoGroups m;
  CHECK_THROWS_AS(StepLR(m.opt, 0), ValueError);
  CHECK_THROWS_WITH(StepLR(m.opt, 0), Catch::Contains("StepLR: invalid step_size 0"));
  CHECK_THROWS_WITH(CosineAnnealingLR(m.opt, 0), Catch::Contains("CosineAnnealingLR: invalid T_max 0"));
  CHECK_THROWS_WITH(MultiStepLR(m.opt, {3, 0}), Catch::Contains("MultiStepLR: invalid milestone 0"));

  StepLR sched(m.opt, 3, 0.5);
  sched.step();
  const StateDict good = sched.state_dict();
  auto without = [&](const std::string& key) {
    StateDict out;
    for (const auto& [name, t] : good)
      if (name != key) out.insert(name, t);
    return out;
  };
  auto with = [&](const std::string& key, const Tensor& t) {
    StateDict out = without(key);
    out.insert(key, t);
    return out;
  };
  CHECK_THROWS_WITH(sched.load_state_dict(with("T_max", scalar_tensor(3, {.dtype = DType::int64}))),
                    Catch::Contains("StepLR.load_state_dict: unknown entry 'T_max'"));
  CHECK_THROWS_WITH(sched.load_state_dict(without("gamma")), Catch::Contains("missing entry 'gamma'"));
  CHECK_THROWS_WITH(sched.load_state_dict(without("last_epoch")), Catch::Contains("missing entry 'last_epoch'"));
  CHECK_THROWS_AS(sched.load_state_dict(with("last_epoch", scalar_tensor(1.0, {.dtype = DType::float64}))), TypeError);
  CHECK_THROWS_WITH(sched.load_state_dict(with("last_epoch", scalar_tensor(-2, {.dtype = DType::int64}))),
                    Catch::Contains("entry 'last_epoch' is negative"));
  CHECK_THROWS_WITH(sched.load_state_dict(with("base_lrs", zeros({3}, {.dtype = DType::float64}))),
                    Catch::Contains("entry 'base_lrs' has 3 values, but the optimizer has 2 parameter groups"));
  CHECK_THROWS_WITH(sched.load_state_dict(with("step_size", scalar_tensor(0, {.dtype = DType::int64}))),
                    Catch::Contains("invalid step_size 0"));
  CHECK(same_state(sched.state_dict(), good));  // failed loads change nothing

  // The optimizer gained a group after the scheduler was built.
  m.opt.add_param_group({{ones({1}, {.requires_grad = true})}, {.lr = 1.0}});
  CHECK_THROWS_WITH(sched.step(),
                    Catch::Contains("the optimizer has 3 parameter groups, the scheduler was built for 2"));
}

TEST_CASE("OneCycleLR: the lr and momentum of PyTorch's one-cycle policy, step by step", "[optim][scheduler]") {
  constexpr double pi = std::numbers::pi;
  const auto cos_anneal = [&](double from, double to, double pct) {
    return to + (from - to) / 2 * (std::cos(pi * pct) + 1);
  };
  // total_steps 10, pct_start 0.3: up over steps 0..2 (end 2), down over 2..9.
  Tensor a = ones({2}, {.requires_grad = true});
  SGD opt({a}, {.lr = 1.0, .momentum = 0.9});
  optim::OneCycleLR sched(opt, 0.4, 10);
  const double initial = 0.4 / 25, min_lr = initial / 1e4;
  for (int step = 0; step <= 10; ++step) {
    if (step > 0) sched.step();
    INFO("step " << step);
    const bool up = step <= 2;
    const double pct = up ? step / 2.0 : (step - 2) / 7.0;
    CHECK(opt.lr(0) == Approx(up ? cos_anneal(initial, 0.4, pct) : cos_anneal(0.4, min_lr, pct)).epsilon(1e-12));
    CHECK(opt.momentum(0) == Approx(up ? cos_anneal(0.95, 0.85, pct) : cos_anneal(0.85, 0.95, pct)).epsilon(1e-12));
    if (step == 9) CHECK(opt.lr(0) == Approx(min_lr).epsilon(1e-12));  // the last phase's end
  }
  // Step total_steps runs on past the last phase's end (as PyTorch's: 0.0198 here); one more is refused.
  CHECK_THROWS_WITH(sched.step(), Catch::Contains("OneCycleLR: stepped 11 times, but total_steps is 10"));
}

TEST_CASE("OneCycleLR: three phases, linear annealing, Adam's beta1, state_dict and misuse", "[optim][scheduler]") {
  Tensor a = ones({2}, {.requires_grad = true});
  optim::Adam adam({a}, {.lr = 1e-3});
  // total 20, pct_start 0.25: initial -> max over 0..4, max -> initial over 4..8, initial -> min over 8..19.
  optim::OneCycleLR sched(adam, 1.0, 20,
                          {.pct_start = 0.25, .anneal_strategy = optim::Anneal::linear, .three_phase = true});
  const double initial = 1.0 / 25, min_lr = initial / 1e4;
  const auto lerp = [](double from, double to, double pct) { return (to - from) * pct + from; };
  for (int step = 0; step <= 20; ++step) {
    if (step > 0) sched.step();
    INFO("step " << step);
    double lr, m;
    if (step <= 4) {
      lr = lerp(initial, 1.0, step / 4.0), m = lerp(0.95, 0.85, step / 4.0);
    } else if (step <= 8) {
      lr = lerp(1.0, initial, (step - 4) / 4.0), m = lerp(0.85, 0.95, (step - 4) / 4.0);
    } else {
      lr = lerp(initial, min_lr, (step - 8) / 11.0), m = 0.95;
    }
    CHECK(adam.lr(0) == Approx(lr).epsilon(1e-12));
    CHECK(adam.param_groups()[0].options.betas[0] == Approx(m).epsilon(1e-12));
  }
  // A scheduler restored from a state_dict continues as the original.
  Tensor b = ones({2}, {.requires_grad = true});
  SGD opt1({b}, {.lr = 0.1, .momentum = 0.9}), opt2({b}, {.lr = 0.1, .momentum = 0.9});
  optim::OneCycleLR s1(opt1, 0.5, 30), s2(opt2, 0.1, 7, {.cycle_momentum = false});
  for (int i = 0; i < 9; ++i) s1.step();
  s2.load_state_dict(s1.state_dict());
  for (int i = 0; i < 12; ++i) {
    s1.step();
    s2.step();
    CHECK(opt2.lr(0) == opt1.lr(0));
    CHECK(opt2.momentum(0) == opt1.momentum(0));
  }
  // Misuse.
  optim::Adadelta adadelta({b});
  CHECK_THROWS_WITH(optim::OneCycleLR(adadelta, 1.0, 10),
                    Catch::Contains("OneCycleLR: Adadelta has no momentum to cycle; pass cycle_momentum = false"));
  CHECK_NOTHROW(optim::OneCycleLR(adadelta, 1.0, 10, {.cycle_momentum = false}));
  CHECK_THROWS_WITH(optim::OneCycleLR(opt1, 1.0, 0), Catch::Contains("OneCycleLR: total_steps must be >= 1, got 0"));
  CHECK_THROWS_AS(optim::OneCycleLR(opt1, -1.0, 10), ValueError);
  CHECK_THROWS_AS(optim::OneCycleLR(opt1, 1.0, 10, {.pct_start = 1.5}), ValueError);
}
