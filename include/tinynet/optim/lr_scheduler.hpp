#pragma once
/// \file
/// Learning-rate schedulers with PyTorch 1.13's semantics: construction records each
/// group's lr as its base lr and counts as epoch 0; `step()`, once per epoch, advances
/// `last_epoch` and writes the new lr into the optimizer's groups. Like PyTorch's, the
/// updates are chainable (they scale the group's current lr), so a value set by hand
/// carries on.
///
/// A scheduler keeps a reference to its optimizer, which must outlive it.
///
/// state_dict entries: last_epoch (int64), base_lrs, last_lr (float64 [groups]) and each
/// scheduler's own hyper-parameters, which load_state_dict restores too.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <vector>

#include "tinynet/optim/optimizer.hpp"

namespace tinynet::optim {

/// The bookkeeping every scheduler shares.
class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  /// Advances one epoch and sets each group's lr. Requires the optimizer to have as many
  /// groups as at construction.
  void step() {
    check_groups();
    ++last_epoch_;
    for (std::size_t g = 0; g < base_lrs_.size(); ++g) {
      const double lr = next_lr(g, opt_.lr(g));
      opt_.set_lr(g, lr);
      last_lr_[g] = lr;
      on_step(g);
    }
  }

  /// The lrs the last step (or the construction) set, one per group.
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  /// Epochs stepped since construction (0 right after it).
  std::int64_t last_epoch() const { return last_epoch_; }
  /// Each group's lr at construction.
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  virtual const char* name() const = 0;

  StateDict state_dict() const {
    StateDict sd;
    sd.insert_int("last_epoch", last_epoch_);
    sd.insert("base_lrs", from_vector(base_lrs_, Shape{std::int64_t(base_lrs_.size())}));
    sd.insert("last_lr", from_vector(last_lr_, Shape{std::int64_t(last_lr_.size())}));
    save_options(sd);
    return sd;
  }

  /// Restores the counters, base lrs and hyper-parameters. Every entry is checked first
  /// (missing, unknown, wrong dtype or length: an error naming it); on error nothing changes.
  void load_state_dict(const StateDict& sd) {
    const std::string who = std::string(name()) + ".load_state_dict: ";
    for (const auto& [key, t] : sd)
      TINYNET_CHECK(ValueError, is_core_key(key) || has_option(key), who, "unknown entry '", key, "'");
    const std::int64_t last_epoch = integer(sd, "last_epoch");
    TINYNET_CHECK(ValueError, last_epoch >= 0, who, "entry 'last_epoch' is negative (", last_epoch, ")");
    const std::vector<double> base_lrs = lr_list(sd, "base_lrs"), last_lr = lr_list(sd, "last_lr");
    load_options(sd);  // validates before assigning
    last_epoch_ = last_epoch;
    base_lrs_ = base_lrs;
    last_lr_ = last_lr;
  }

 protected:
  /// Records the optimizer's lrs as base lrs, at epoch 0.
  explicit LRScheduler(Optimizer& opt) : opt_(opt) {
    for (std::size_t g = 0; g < opt.num_param_groups(); ++g) base_lrs_.push_back(opt.lr(g));
    last_lr_ = base_lrs_;
  }

  /// Group g's lr for epoch last_epoch() (already advanced), given its current lr.
  virtual double next_lr(std::size_t g, double current) const = 0;
  /// After group g's lr is set: what else a scheduler sets (OneCycleLR: the momentum).
  virtual void on_step(std::size_t g) { (void)g; }
  Optimizer& optimizer() const { return opt_; }
  virtual void save_options(StateDict& sd) const = 0;
  virtual bool has_option(std::string_view key) const = 0;
  /// Reads and validates every option from `sd`, then assigns them.
  virtual void load_options(const StateDict& sd) = 0;

  /// The int64 scalar `key` of `sd`; errors name the scheduler and the entry.
  std::int64_t integer(const StateDict& sd, const char* key) const {
    const std::string who = std::string(name()) + ".load_state_dict: ";
    TINYNET_CHECK(ValueError, sd.contains(key), who, "missing entry '", key, "'");
    const Tensor& t = sd.at(key);
    TINYNET_CHECK(TypeError, t.dtype() == DType::int64 && t.dim() == 0, who, "entry '", key,
                  "' must be an int64 scalar, got ", t.dtype(), " ", t.shape());
    return *t.data<std::int64_t>();
  }
  /// The float64 scalar `key` of `sd`.
  double scalar(const StateDict& sd, const char* key) const {
    const std::string who = std::string(name()) + ".load_state_dict: ";
    TINYNET_CHECK(ValueError, sd.contains(key), who, "missing entry '", key, "'");
    const Tensor& t = sd.at(key);
    TINYNET_CHECK(TypeError, t.dtype() == DType::float64 && t.dim() == 0, who, "entry '", key,
                  "' must be a float64 scalar, got ", t.dtype(), " ", t.shape());
    return *t.data<double>();
  }

 private:
  static bool is_core_key(std::string_view key) { return key == "last_epoch" || key == "base_lrs" || key == "last_lr"; }
  std::vector<double> lr_list(const StateDict& sd, const char* key) const {
    const std::string who = std::string(name()) + ".load_state_dict: ";
    TINYNET_CHECK(ValueError, sd.contains(key), who, "missing entry '", key, "'");
    const Tensor& t = sd.at(key);
    TINYNET_CHECK(TypeError, t.dtype() == DType::float64 && t.dim() == 1, who, "entry '", key,
                  "' must be a 1-d float64 tensor, got ", t.dtype(), " ", t.shape());
    TINYNET_CHECK(ValueError, t.numel() == std::int64_t(base_lrs_.size()), who, "entry '", key, "' has ", t.numel(),
                  " values, but the optimizer has ", base_lrs_.size(), " parameter groups");
    return {t.data<double>(), t.data<double>() + t.numel()};
  }
  void check_groups() const {
    TINYNET_CHECK(ValueError, opt_.num_param_groups() == base_lrs_.size(), name(), ": the optimizer has ",
                  opt_.num_param_groups(), " parameter groups, the scheduler was built for ", base_lrs_.size());
  }

  Optimizer& opt_;
  std::int64_t last_epoch_ = 0;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
};

/// lr = base_lr · gamma^⌊epoch / step_size⌋ (multiplies by gamma every step_size epochs).
class StepLR final : public LRScheduler {
 public:
  /// Requires step_size >= 1.
  StepLR(Optimizer& opt, std::int64_t step_size, double gamma = 0.1)
      : LRScheduler(opt), step_size_(checked(step_size)), gamma_(gamma) {}
  const char* name() const override { return "StepLR"; }

 protected:
  double next_lr(std::size_t, double current) const override {
    return last_epoch() % step_size_ == 0 ? current * gamma_ : current;
  }
  void save_options(StateDict& sd) const override {
    sd.insert_int("step_size", step_size_);
    sd.insert_scalar("gamma", gamma_);
  }
  bool has_option(std::string_view key) const override { return key == "step_size" || key == "gamma"; }
  void load_options(const StateDict& sd) override {
    const std::int64_t step_size = checked(integer(sd, "step_size"));
    gamma_ = scalar(sd, "gamma");
    step_size_ = step_size;
  }

 private:
  static std::int64_t checked(std::int64_t step_size) {
    TINYNET_CHECK(ValueError, step_size >= 1, "StepLR: invalid step_size ", step_size, " (must be >= 1)");
    return step_size;
  }
  std::int64_t step_size_;
  double gamma_;
};

/// lr = base_lr · gamma^(number of milestones <= epoch); a milestone listed twice counts twice.
class MultiStepLR final : public LRScheduler {
 public:
  /// Requires milestones >= 1 (any order; kept sorted).
  MultiStepLR(Optimizer& opt, std::vector<std::int64_t> milestones, double gamma = 0.1)
      : LRScheduler(opt), milestones_(checked(std::move(milestones))), gamma_(gamma) {}
  const char* name() const override { return "MultiStepLR"; }
  const std::vector<std::int64_t>& milestones() const { return milestones_; }

 protected:
  double next_lr(std::size_t, double current) const override {
    const auto [lo, hi] = std::equal_range(milestones_.begin(), milestones_.end(), last_epoch());
    return lo == hi ? current : current * std::pow(gamma_, static_cast<double>(hi - lo));
  }
  void save_options(StateDict& sd) const override {
    sd.insert("milestones", from_vector(milestones_, Shape{std::int64_t(milestones_.size())}));
    sd.insert_scalar("gamma", gamma_);
  }
  bool has_option(std::string_view key) const override { return key == "milestones" || key == "gamma"; }
  void load_options(const StateDict& sd) override {
    TINYNET_CHECK(ValueError, sd.contains("milestones"), "MultiStepLR.load_state_dict: missing entry 'milestones'");
    const Tensor& t = sd.at("milestones");
    TINYNET_CHECK(TypeError, t.dtype() == DType::int64 && t.dim() == 1,
                  "MultiStepLR.load_state_dict: entry 'milestones' must be a 1-d int64 tensor, got ", t.dtype(), " ",
                  t.shape());
    std::vector<std::int64_t> milestones = checked({t.data<std::int64_t>(), t.data<std::int64_t>() + t.numel()});
    gamma_ = scalar(sd, "gamma");
    milestones_ = std::move(milestones);
  }

 private:
  static std::vector<std::int64_t> checked(std::vector<std::int64_t> m) {
    for (std::int64_t e : m) TINYNET_CHECK(ValueError, e >= 1, "MultiStepLR: invalid milestone ", e, " (must be >= 1)");
    std::sort(m.begin(), m.end());
    return m;
  }
  std::vector<std::int64_t> milestones_;
  double gamma_;
};

/// lr = base_lr · gamma^epoch.
class ExponentialLR final : public LRScheduler {
 public:
  ExponentialLR(Optimizer& opt, double gamma) : LRScheduler(opt), gamma_(gamma) {}
  const char* name() const override { return "ExponentialLR"; }

 protected:
  double next_lr(std::size_t, double current) const override { return current * gamma_; }
  void save_options(StateDict& sd) const override { sd.insert_scalar("gamma", gamma_); }
  bool has_option(std::string_view key) const override { return key == "gamma"; }
  void load_options(const StateDict& sd) override { gamma_ = scalar(sd, "gamma"); }

 private:
  double gamma_;
};

/// lr = eta_min + (base_lr - eta_min) (1 + cos(π epoch / T_max)) / 2, continued past
/// T_max as a cosine of period 2 T_max. Computed, as in PyTorch 1.13, by the recursive
/// form from the group's current lr (equal to the closed form in exact arithmetic).
class CosineAnnealingLR final : public LRScheduler {
 public:
  /// Requires T_max >= 1.
  CosineAnnealingLR(Optimizer& opt, std::int64_t T_max, double eta_min = 0.0)
      : LRScheduler(opt), t_max_(checked(T_max)), eta_min_(eta_min) {}
  const char* name() const override { return "CosineAnnealingLR"; }

 protected:
  double next_lr(std::size_t g, double current) const override {
    constexpr double pi = std::numbers::pi;
    const double e = static_cast<double>(last_epoch()), t = static_cast<double>(t_max_);
    // Restart at the bottom of the cosine, where the ratio below would divide by zero.
    if ((last_epoch() - 1 - t_max_) % (2 * t_max_) == 0)
      return current + (base_lrs()[g] - eta_min_) * (1 - std::cos(pi / t)) / 2;
    return (1 + std::cos(pi * e / t)) / (1 + std::cos(pi * (e - 1) / t)) * (current - eta_min_) + eta_min_;
  }
  void save_options(StateDict& sd) const override {
    sd.insert_int("T_max", t_max_);
    sd.insert_scalar("eta_min", eta_min_);
  }
  bool has_option(std::string_view key) const override { return key == "T_max" || key == "eta_min"; }
  void load_options(const StateDict& sd) override {
    const std::int64_t t_max = checked(integer(sd, "T_max"));
    eta_min_ = scalar(sd, "eta_min");
    t_max_ = t_max;
  }

 private:
  static std::int64_t checked(std::int64_t t_max) {
    TINYNET_CHECK(ValueError, t_max >= 1, "CosineAnnealingLR: invalid T_max ", t_max, " (must be >= 1)");
    return t_max;
  }
  std::int64_t t_max_;
  double eta_min_;
};

/// How OneCycleLR moves between its phases' ends (PyTorch's anneal_strategy).
enum class Anneal { cos, linear };

/// OneCycleLR's hyper-parameters, with PyTorch 1.13's defaults.
struct OneCycleOptions {
  double pct_start = 0.3;  ///< the share of the steps spent raising the lr
  Anneal anneal_strategy = Anneal::cos;
  bool cycle_momentum = true;  ///< momentum cycled inversely to the lr, from max_momentum
  double base_momentum = 0.85;
  double max_momentum = 0.95;
  double div_factor = 25;         ///< initial lr = max_lr / div_factor
  double final_div_factor = 1e4;  ///< final lr = initial lr / final_div_factor
  bool three_phase = false;       ///< back down to the initial lr before the final descent
};

/// The one-cycle policy (Smith and Topin), stepped once per batch, as PyTorch's OneCycleLR:
/// the lr rises from max_lr / div_factor to max_lr over pct_start of total_steps, then
/// falls to (max_lr / div_factor) / final_div_factor (three_phase: first back to the initial
/// lr), each phase annealed by a cosine or linearly; with cycle_momentum the momentum (SGD's
/// momentum, Adam's betas[0]) moves the other way between max_momentum and base_momentum.
/// Construction sets the initial lr (and momentum) in every group. Stepping past total_steps
/// is a ValueError.
class OneCycleLR final : public LRScheduler {
 public:
  OneCycleLR(Optimizer& opt, double max_lr, std::int64_t total_steps, OneCycleOptions o = {})
      : LRScheduler(start(opt, max_lr, total_steps, o)), max_lr_(max_lr), total_steps_(total_steps), o_(o) {}
  const char* name() const override { return "OneCycleLR"; }

 protected:
  double next_lr(std::size_t, double) const override { return at(last_epoch()).lr; }
  void on_step(std::size_t g) override {
    if (o_.cycle_momentum) optimizer().set_momentum(g, at(last_epoch()).momentum);
  }
  void save_options(StateDict& sd) const override {
    sd.insert_scalar("max_lr", max_lr_);
    sd.insert_int("total_steps", total_steps_);
    sd.insert_scalar("pct_start", o_.pct_start);
    sd.insert_int("anneal_strategy", o_.anneal_strategy == Anneal::cos ? 0 : 1);
    sd.insert_int("cycle_momentum", o_.cycle_momentum);
    sd.insert_scalar("base_momentum", o_.base_momentum);
    sd.insert_scalar("max_momentum", o_.max_momentum);
    sd.insert_scalar("div_factor", o_.div_factor);
    sd.insert_scalar("final_div_factor", o_.final_div_factor);
    sd.insert_int("three_phase", o_.three_phase);
  }
  bool has_option(std::string_view key) const override {
    for (const char* k : {"max_lr", "total_steps", "pct_start", "anneal_strategy", "cycle_momentum", "base_momentum",
                          "max_momentum", "div_factor", "final_div_factor", "three_phase"})
      if (key == k) return true;
    return false;
  }
  void load_options(const StateDict& sd) override {
    OneCycleOptions o;
    const double max_lr = scalar(sd, "max_lr");
    const std::int64_t total_steps = integer(sd, "total_steps");
    o.pct_start = scalar(sd, "pct_start");
    o.anneal_strategy = integer(sd, "anneal_strategy") == 0 ? Anneal::cos : Anneal::linear;
    o.cycle_momentum = integer(sd, "cycle_momentum") != 0;
    o.base_momentum = scalar(sd, "base_momentum");
    o.max_momentum = scalar(sd, "max_momentum");
    o.div_factor = scalar(sd, "div_factor");
    o.final_div_factor = scalar(sd, "final_div_factor");
    o.three_phase = integer(sd, "three_phase") != 0;
    check(optimizer(), max_lr, total_steps, o);
    max_lr_ = max_lr;
    total_steps_ = total_steps;
    o_ = o;
  }

 private:
  struct Point {
    double lr, momentum;
  };

  /// The lr and momentum after `step` steps (PyTorch's phases: each ends at a step, the
  /// last runs on to total_steps).
  Point at(std::int64_t step) const {
    TINYNET_CHECK(ValueError, step <= total_steps_, "OneCycleLR: stepped ", step, " times, but total_steps is ",
                  total_steps_);
    const double initial = max_lr_ / o_.div_factor, min_lr = initial / o_.final_div_factor;
    const double up_end = o_.pct_start * static_cast<double>(total_steps_) - 1, last = double(total_steps_ - 1);
    struct Phase {
      double end, lr0, lr1, m0, m1;
    };
    const double hi = o_.max_momentum, lo = o_.base_momentum;
    const std::array<Phase, 3> phases =
        o_.three_phase ? std::array<Phase, 3>{{{up_end, initial, max_lr_, hi, lo},
                                               {2 * up_end, max_lr_, initial, lo, hi},
                                               {last, initial, min_lr, hi, hi}}}
                       : std::array<Phase, 3>{{{up_end, initial, max_lr_, hi, lo}, {last, max_lr_, min_lr, lo, hi}}};
    const std::size_t count = o_.three_phase ? 3 : 2;
    const double s = static_cast<double>(step);
    std::size_t i = 0;
    while (i + 1 < count && s > phases[i].end) ++i;  // the last phase runs on to total_steps
    const Phase& p = phases[i];
    const double begin = i == 0 ? 0 : phases[i - 1].end;
    const double pct = (s - begin) / (p.end - begin);
    return {anneal(p.lr0, p.lr1, pct), anneal(p.m0, p.m1, pct)};
  }
  double anneal(double from, double to, double pct) const {
    if (o_.anneal_strategy == Anneal::linear) return (to - from) * pct + from;
    return to + (from - to) / 2 * (std::cos(std::numbers::pi * pct) + 1);
  }
  static void check(const Optimizer& opt, double max_lr, std::int64_t total_steps, const OneCycleOptions& o) {
    TINYNET_CHECK(ValueError, total_steps >= 1, "OneCycleLR: total_steps must be >= 1, got ", total_steps);
    TINYNET_CHECK(ValueError, max_lr > 0, "OneCycleLR: max_lr must be > 0, got ", max_lr);
    TINYNET_CHECK(ValueError, o.pct_start >= 0 && o.pct_start <= 1, "OneCycleLR: pct_start must be in [0, 1], got ",
                  o.pct_start);
    TINYNET_CHECK(ValueError, o.div_factor > 0 && o.final_div_factor > 0,
                  "OneCycleLR: div_factor and final_div_factor must be > 0, got ", o.div_factor, " and ",
                  o.final_div_factor);
    TINYNET_CHECK(ValueError, !o.cycle_momentum || opt.has_momentum(), "OneCycleLR: ", opt.name(),
                  " has no momentum to cycle; pass cycle_momentum = false");
  }
  /// Sets every group's initial lr (and momentum), which the base records as its base lrs.
  static Optimizer& start(Optimizer& opt, double max_lr, std::int64_t total_steps, const OneCycleOptions& o) {
    check(opt, max_lr, total_steps, o);
    for (std::size_t g = 0; g < opt.num_param_groups(); ++g) {
      opt.set_lr(g, max_lr / o.div_factor);
      if (o.cycle_momentum) opt.set_momentum(g, o.max_momentum);
    }
    return opt;
  }

  double max_lr_;
  std::int64_t total_steps_;
  OneCycleOptions o_;
};

}  // namespace tinynet::optim
