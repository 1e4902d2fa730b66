#pragma once
/// \file
/// Optimizer: the interface schedulers and checkpoints see, and OptimizerBase<Options>,
/// which holds parameter groups and per-parameter state for SGD, Adadelta, Adam, AdamW.
///
/// Like PyTorch, parameters are grouped; each group has its own hyper-parameters
/// (`param_groups()[g].options`, `lr` included). Parameters are shared handles: an update
/// writes into the model's tensors. A parameter whose grad is undefined is skipped.
/// State (momentum buffers, moments, step counts) is created on a parameter's first
/// update and reused after, so steady-state steps allocate nothing.
///
/// state_dict layout (PyTorch's, flattened; parameters numbered 0.. across groups):
/// ```
///   state.<id>.<name>          per-parameter tensors ("momentum_buffer", "exp_avg", ...)
///   state.<id>.step            int64 scalar, for optimizers that count steps
///   param_groups.<g>.params    int64 [n]: the ids of group g's parameters
///   param_groups.<g>.<option>  float64 scalar (bools as int64 0/1, betas as float64 [2])
/// ```

#include <array>
#include <charconv>
#include <concepts>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tinynet/autograd/grad_mode.hpp"
#include "tinynet/core/creation.hpp"
#include "tinynet/core/state_dict.hpp"
#include "tinynet/core/tensor.hpp"

namespace tinynet::optim {

/// What every optimizer offers to code that does not know its type (schedulers, checkpoints).
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// "SGD", "Adam", ... (used in error messages).
  virtual const char* name() const = 0;
  /// One update of every parameter whose grad is defined, with autograd off.
  virtual void step() = 0;
  /// Clears every parameter's gradient: resets the handle (set_to_none) or fills zeros.
  virtual void zero_grad(bool set_to_none = true) = 0;
  virtual std::size_t num_param_groups() const = 0;
  /// Learning rate of group `group`; IndexError when out of range.
  virtual double lr(std::size_t group) const = 0;
  virtual void set_lr(std::size_t group, double lr) = 0;
  /// Whether the groups have a momentum a scheduler may cycle (OneCycleLR): SGD's
  /// `momentum`, Adam's `betas[0]`, as PyTorch's schedulers take them.
  virtual bool has_momentum() const { return false; }
  /// Group `group`'s momentum; only where has_momentum().
  virtual double momentum(std::size_t group) const {
    (void)group;
    throw ValueError(::tinynet::detail::concat(name(), " has no momentum"));
  }
  virtual void set_momentum(std::size_t group, double momentum) {
    (void)group, (void)momentum;
    throw ValueError(::tinynet::detail::concat(name(), " has no momentum"));
  }
  /// A deep copy of the hyper-parameters and per-parameter state.
  virtual StateDict state_dict() const = 0;
  /// Replaces hyper-parameters and state with `sd`'s (copied). Validates everything first:
  /// on any mismatch it throws (naming the entry) and leaves the optimizer unchanged.
  virtual void load_state_dict(const StateDict& sd) = 0;
};

/// Parameters sharing hyper-parameters.
template <typename Options>
struct ParamGroup {
  std::vector<Tensor> params;
  Options options;
};

/// Per-parameter state: a step count and up to three buffers shaped like the parameter,
/// named by the optimizer's state_names().
struct ParamState {
  static constexpr std::size_t kMaxBuffers = 3;
  Tensor param;  // keeps the map key (the parameter's impl) alive
  std::int64_t step = 0;
  std::array<Tensor, kMaxBuffers> buffers;
};

/// What OptimizerBase needs from an options aggregate: the optimizer's name, `lr`,
/// `validate()` (ValueError naming the option), and `fields(self, f)` calling
/// f(name, member) for every hyper-parameter (double, bool or std::array<double, 2>).
template <typename O>
concept OptimizerOptions = requires(O o, const O c) {
  { O::kOptimizer } -> std::convertible_to<const char*>;
  requires std::same_as<decltype(o.lr), double>;
  c.validate();
};

namespace detail {

/// ValueError "<optimizer>: invalid <option> <value> (<requirement>)" unless `ok`.
inline void check_option(bool ok, const char* optimizer, const char* option, double value, const char* requirement) {
  TINYNET_CHECK(ValueError, ok, optimizer, ": invalid ", option, " ", value, " (", requirement, ")");
}

/// Parses a non-negative decimal index written canonically ("0", "12"; not "012", "+1").
inline bool parse_index(std::string_view s, std::int64_t& out) {
  if (s.empty() || s.size() > 18 || (s.size() > 1 && s[0] == '0')) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && out >= 0;
}

/// Splits "<head>.<index>.<tail>"; false unless it has that form with `head` as given.
inline bool split_key(std::string_view key, std::string_view head, std::int64_t& index, std::string_view& tail) {
  if (key.size() <= head.size() + 1 || key.compare(0, head.size(), head) != 0 || key[head.size()] != '.') return false;
  key.remove_prefix(head.size() + 1);
  const auto dot = key.find('.');
  if (dot == std::string_view::npos || dot + 1 == key.size()) return false;
  tail = key.substr(dot + 1);
  return parse_index(key.substr(0, dot), index);
}

}  // namespace detail

/// Parameter groups, per-parameter state and their state_dict for an optimizer whose
/// hyper-parameters are `Options`. A derived class supplies the state names and the
/// update of one parameter.
template <OptimizerOptions Options>
class OptimizerBase : public Optimizer {
 public:
  using Group = ParamGroup<Options>;

  const char* name() const override { return Options::kOptimizer; }

  /// The groups; options (lr included) may be changed between steps.
  std::vector<Group>& param_groups() { return groups_; }
  const std::vector<Group>& param_groups() const { return groups_; }

  /// Adds a group. Requires defined, floating, leaf tensors that are in no other group,
  /// and valid options.
  void add_param_group(Group group) {
    group.options.validate();
    for (std::size_t i = 0; i < group.params.size(); ++i) {
      const Tensor& p = group.params[i];
      TINYNET_CHECK(ValueError, p.defined(), name(), ": parameter ", i, " of group ", groups_.size(),
                    " is an undefined tensor");
      TINYNET_CHECK(TypeError, is_floating(p.dtype()), name(), ": parameter ", i, " of group ", groups_.size(), " is ",
                    p.dtype(), "; only float32 and float64 tensors can be optimized");
      TINYNET_CHECK(ValueError, p.is_leaf(), name(), ": parameter ", i, " of group ", groups_.size(),
                    " is not a leaf tensor (it was computed by an op); optimize leaves only");
      bool seen = false;
      for (std::size_t j = 0; j < i; ++j) seen = seen || group.params[j].is_same(p);
      for (const Group& g : groups_)
        for (const Tensor& q : g.params) seen = seen || q.is_same(p);
      TINYNET_CHECK(ValueError, !seen, name(), ": parameter ", i, " of group ", groups_.size(),
                    " appears more than once in the parameter groups");
    }
    groups_.push_back(std::move(group));
  }

  void step() override {
    NoGradGuard no_grad;
    for (Group& group : groups_) {
      for (Tensor& p : group.params) {
        const Tensor g = p.grad();
        if (!g.defined()) continue;
        TINYNET_CHECK(TypeError, g.device() == p.device(), name(), ": gradient on ", g.device(),
                      " but its parameter is on ", p.device());
        TINYNET_CHECK(ShapeError, g.shape() == p.shape(), name(), ": gradient has shape ", g.shape(),
                      " but its parameter has shape ", p.shape());
        TINYNET_CHECK(TypeError, g.dtype() == p.dtype(), name(), ": gradient is ", g.dtype(), " but its parameter is ",
                      p.dtype());
        auto it = state_.find(p.impl_ptr().get());
        if (it == state_.end()) it = state_.emplace(p.impl_ptr().get(), ParamState{}).first;
        if (!it->second.param.defined()) it->second.param = p;
        update(p, g, it->second, group.options);
      }
    }
  }

  void zero_grad(bool set_to_none = true) override {
    for (Group& group : groups_)
      for (Tensor& p : group.params) {
        if (set_to_none)
          p.set_grad(Tensor());
        else if (Tensor g = p.grad(); g.defined())
          g.zero_();
      }
  }

  std::size_t num_param_groups() const override { return groups_.size(); }
  double lr(std::size_t group) const override { return group_at(group).options.lr; }
  void set_lr(std::size_t group, double lr) override { groups_[checked_group(group)].options.lr = lr; }
  bool has_momentum() const override {
    return requires(Options o) { o.momentum; }
    || requires(Options o) { o.betas[0]; };
  }
  double momentum(std::size_t group) const override {
    const Options& o = group_at(group).options;
    if constexpr (requires { o.momentum; })
      return o.momentum;
    else if constexpr (requires { o.betas[0]; })
      return o.betas[0];
    else
      return Optimizer::momentum(group);
  }
  void set_momentum(std::size_t group, double momentum) override {
    Options& o = groups_[checked_group(group)].options;
    if constexpr (requires { o.momentum; })
      o.momentum = momentum;
    else if constexpr (requires { o.betas[0]; })
      o.betas[0] = momentum;
    else
      Optimizer::set_momentum(group, momentum);
  }

  /// The state of parameter `p`, or null before its first update.
  const ParamState* state(const Tensor& p) const {
    auto it = state_.find(p.impl_ptr().get());
    return it == state_.end() ? nullptr : &it->second;
  }

  StateDict state_dict() const override {
    StateDict sd;
    const auto names = state_names();
    std::int64_t id = 0;
    for (const Group& group : groups_)
      for (const Tensor& p : group.params) {
        if (const ParamState* s = state(p)) {
          const std::string prefix = "state." + std::to_string(id) + ".";
          if (counts_steps()) sd.insert_int(prefix + "step", s->step);
          for (std::size_t b = 0; b < names.size(); ++b)
            if (s->buffers[b].defined()) sd.insert(prefix + names[b], s->buffers[b].clone());
        }
        ++id;
      }
    id = 0;
    for (std::size_t g = 0; g < groups_.size(); ++g) {
      const std::string prefix = "param_groups." + std::to_string(g) + ".";
      Tensor ids(Shape{static_cast<std::int64_t>(groups_[g].params.size())}, {.dtype = DType::int64});
      for (std::int64_t& v : std::span(ids.data<std::int64_t>(), groups_[g].params.size())) v = id++;
      sd.insert(prefix + "params", ids);
      Options::fields(groups_[g].options, [&]<typename V>(const char* field, const V& v) {
        if constexpr (std::is_same_v<V, bool>)
          sd.insert_int(prefix + field, v ? 1 : 0);
        else if constexpr (std::is_same_v<V, double>)
          sd.insert_scalar(prefix + field, v);
        else
          sd.insert(prefix + field,
                    from_vector(std::vector<double>(v.begin(), v.end()), Shape{std::int64_t(v.size())}));
      });
    }
    return sd;
  }

  void load_state_dict(const StateDict& sd) override;

 protected:
  explicit OptimizerBase(std::vector<Group> groups) {
    TINYNET_CHECK(ValueError, !groups.empty(), name(), ": got no parameter groups");
    for (Group& g : groups) add_param_group(std::move(g));
    std::size_t total = 0;
    for (const Group& g : groups_) total += g.params.size();
    TINYNET_CHECK(ValueError, total > 0, name(), ": got an empty parameter list");
  }

  /// Names of the state buffers, in ParamState::buffers order.
  virtual std::span<const char* const> state_names() const = 0;
  /// Whether state includes a step count (saved as `state.<id>.step`).
  virtual bool counts_steps() const = 0;
  /// Whether buffer `b` must be present in a loaded state entry under `options`.
  virtual bool buffer_required(std::size_t b, const Options& options) const = 0;
  /// Updates `p` in place from `grad` (same shape and dtype, CPU), creating state on first use.
  virtual void update(Tensor& p, const Tensor& grad, ParamState& state, const Options& options) = 0;

  /// The state buffer `b`, allocated like `p` (zero-filled when `zero`) if not yet there.
  static Tensor& buffer(ParamState& s, std::size_t b, const Tensor& p, bool zero) {
    if (!s.buffers[b].defined()) s.buffers[b] = zero ? zeros(p.shape(), p.options()) : empty(p.shape(), p.options());
    return s.buffers[b];
  }

 private:
  std::size_t checked_group(std::size_t g) const {
    TINYNET_CHECK(IndexError, g < groups_.size(), name(), ": parameter group ", g, " out of range (", groups_.size(),
                  " groups)");
    return g;
  }
  const Group& group_at(std::size_t g) const { return groups_[checked_group(g)]; }

  std::vector<Group> groups_;
  std::unordered_map<const tinynet::detail::TensorImpl*, ParamState> state_;
};

template <OptimizerOptions Options>
void OptimizerBase<Options>::load_state_dict(const StateDict& sd) {
  const std::string who = std::string(name()) + ".load_state_dict: ";
  const auto names = state_names();

  // Sort the entries into groups and per-parameter state; anything else is unknown.
  std::map<std::int64_t, std::map<std::string, const Tensor*, std::less<>>> group_entries, state_entries;
  for (const auto& [key, t] : sd) {
    std::int64_t index = 0;
    std::string_view tail;
    if (detail::split_key(key, "param_groups", index, tail))
      group_entries[index][std::string(tail)] = &t;
    else if (detail::split_key(key, "state", index, tail))
      state_entries[index][std::string(tail)] = &t;
    else
      TINYNET_CHECK(ValueError, false, who, "unknown entry '", key, "'");
  }
  TINYNET_CHECK(ValueError, group_entries.size() == groups_.size(), who, "the state_dict has ", group_entries.size(),
                " parameter groups, the optimizer has ", groups_.size());

  auto entry = [&](const std::string& key, const std::map<std::string, const Tensor*, std::less<>>& m,
                   std::string_view field) -> const Tensor& {
    auto it = m.find(field);
    TINYNET_CHECK(ValueError, it != m.end(), who, "missing entry '", key, "'");
    return *it->second;
  };
  auto check_kind = [&](const std::string& key, const Tensor& t, DType dtype, const Shape& shape) {
    TINYNET_CHECK(TypeError, t.dtype() == dtype, who, "entry '", key, "' is ", t.dtype(), ", expected ", dtype);
    TINYNET_CHECK(ShapeError, t.shape() == shape, who, "entry '", key, "' has shape ", t.shape(), ", expected ", shape);
  };

  // Group options and the ids of their parameters.
  std::vector<Options> options(groups_.size());
  std::map<std::int64_t, const Tensor*> param_of_id;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    const std::string prefix = "param_groups." + std::to_string(g) + ".";
    TINYNET_CHECK(ValueError, group_entries.count(static_cast<std::int64_t>(g)), who, "missing entry '", prefix,
                  "params' (group indices must run from 0)");
    const auto& fields = group_entries[static_cast<std::int64_t>(g)];
    std::size_t used = 1;
    const Tensor& ids = entry(prefix + "params", fields, "params");
    TINYNET_CHECK(TypeError, ids.dtype() == DType::int64 && ids.dim() == 1, who, "entry '", prefix,
                  "params' must be a 1-d int64 tensor, got ", ids.dtype(), " ", ids.shape());
    const auto& params = groups_[g].params;
    TINYNET_CHECK(ValueError, ids.numel() == static_cast<std::int64_t>(params.size()), who, "parameter group ", g,
                  " has ", ids.numel(), " parameters in the state_dict ('", prefix, "params'), ", params.size(),
                  " in the optimizer");
    for (std::size_t j = 0; j < params.size(); ++j) {
      const std::int64_t id = ids.data<std::int64_t>()[j];
      TINYNET_CHECK(ValueError, param_of_id.emplace(id, &params[j]).second, who, "parameter id ", id,
                    " appears more than once in the param_groups entries");
    }
    Options::fields(options[g], [&]<typename V>(const char* field, V& v) {
      const std::string key = prefix + field;
      const Tensor& t = entry(key, fields, field);
      ++used;
      if constexpr (std::is_same_v<V, bool>) {
        check_kind(key, t, DType::int64, Shape{});
        const std::int64_t b = *t.data<std::int64_t>();
        TINYNET_CHECK(ValueError, b == 0 || b == 1, who, "entry '", key, "' must be 0 or 1, got ", b);
        v = b == 1;
      } else if constexpr (std::is_same_v<V, double>) {
        check_kind(key, t, DType::float64, Shape{});
        v = *t.data<double>();
      } else {
        check_kind(key, t, DType::float64, Shape{std::int64_t(v.size())});
        for (std::size_t k = 0; k < v.size(); ++k) v[k] = t.data<double>()[k];
      }
    });
    if (used != fields.size())
      for (const auto& [field, t] : fields) {
        bool known = field == "params";
        Options::fields(options[g], [&](const char* f, const auto&) { known = known || field == f; });
        TINYNET_CHECK(ValueError, known, who, "unknown entry '", prefix, field, "'");
      }
    try {
      options[g].validate();
    } catch (const ValueError& e) {
      throw ValueError(who + "entries '" + prefix + "*': " + e.what());
    }
  }

  // Per-parameter state, checked against its parameter and converted to its dtype.
  std::unordered_map<const tinynet::detail::TensorImpl*, ParamState> state;
  for (const auto& [id, fields] : state_entries) {
    const std::string prefix = "state." + std::to_string(id) + ".";
    auto owner = param_of_id.find(id);
    TINYNET_CHECK(ValueError, owner != param_of_id.end(), who, "entry '", prefix, fields.begin()->first,
                  "' is state of parameter ", id, ", which no parameter group lists");
    const Tensor& p = *owner->second;
    const Options* opts = nullptr;
    for (std::size_t g = 0; g < groups_.size() && !opts; ++g)
      for (const Tensor& q : groups_[g].params)
        if (q.is_same(p)) opts = &options[g];
    ParamState s;
    s.param = p;
    for (const auto& [field, entry_ptr] : fields) {
      const Tensor& t = *entry_ptr;
      const std::string key = prefix + field;
      if (field == "step" && counts_steps()) {
        check_kind(key, t, DType::int64, Shape{});
        s.step = *t.data<std::int64_t>();
        TINYNET_CHECK(ValueError, s.step >= 0, who, "entry '", key, "' is negative (", s.step, ")");
        continue;
      }
      std::size_t b = 0;
      while (b < names.size() && field != names[b]) ++b;
      TINYNET_CHECK(ValueError, b < names.size(), who, "unknown entry '", key, "'");
      TINYNET_CHECK(TypeError, is_floating(t.dtype()), who, "entry '", key, "' is ", t.dtype(),
                    ", expected a floating tensor");
      TINYNET_CHECK(ShapeError, t.shape() == p.shape(), who, "entry '", key, "' has shape ", t.shape(),
                    " but parameter ", id, " has shape ", p.shape());
      s.buffers[b] = t.to(p.dtype());
      if (s.buffers[b].device() != p.device()) s.buffers[b] = s.buffers[b].to(p.device());
    }
    if (counts_steps()) entry(prefix + "step", fields, "step");
    for (std::size_t b = 0; b < names.size(); ++b)
      if (buffer_required(b, *opts)) entry(prefix + names[b], fields, names[b]);
    state.emplace(p.impl_ptr().get(), std::move(s));
  }

  for (std::size_t g = 0; g < groups_.size(); ++g) groups_[g].options = options[g];
  state_ = std::move(state);
}

}  // namespace tinynet::optim
