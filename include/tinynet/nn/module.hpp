#pragma once
/// \file
/// Module: the base of every layer and model (CRTP).
///
/// A module lists what it owns in one member template, `visit`:
/// \code
///   template <class V> void visit(V&& v) {
///     v("conv1", conv1);                                  // a child module
///     v("weight", weight_, nn::TensorKind::parameter);    // a tensor it owns
///   }
/// \endcode
/// From that one list the base derives hierarchical names ("conv1.weight"),
/// parameters(), state_dict(), load_state_dict(), train()/eval() and zero_grad(), for
/// layers, for Sequential and for hand-written models alike.

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tinynet/core/state_dict.hpp"
#include "tinynet/core/tensor.hpp"

namespace tinynet::nn {

/// A parameter is trained; a buffer (BatchNorm's running statistics) is saved but not trained.
enum class TensorKind { parameter, buffer };

template <class Derived>
class Module;

namespace detail {

struct ModuleTag {};

template <class M>
concept ModuleLike = std::derived_from<M, ModuleTag>;

/// Walks a module tree, calling on_tensor(full_name, tensor, kind) and on_module(module).
template <class OnTensor, class OnModule>
struct Walker {
  std::string prefix;
  OnTensor& on_tensor;
  OnModule& on_module;

  void operator()(std::string_view name, Tensor& t, TensorKind kind) const {
    on_tensor(prefix + std::string(name), t, kind);
  }
  template <ModuleLike M>
  void operator()(std::string_view name, M& child) const {
    on_module(child);
    child.visit(Walker{prefix + std::string(name) + ".", on_tensor, on_module});
  }
};

template <class M, class OnTensor, class OnModule>
void walk(M& root, OnTensor&& on_tensor, OnModule&& on_module) {
  on_module(root);
  root.visit(Walker<std::remove_reference_t<OnTensor>, std::remove_reference_t<OnModule>>{"", on_tensor, on_module});
}

inline constexpr auto ignore_modules = [](auto&) {};

/// A type's name without namespaces or template arguments, for messages: "Linear", "Net".
template <class T>
std::string_view type_name() {
#if defined(__clang__) || defined(__GNUC__)
  std::string_view s = __PRETTY_FUNCTION__;  // "... [with T = tinynet::nn::Linear<10, 0>; ...]"
  const std::size_t from = s.find("T = ") + 4;
  s = s.substr(from, s.find_first_of(";]", from) - from);
  s = s.substr(0, s.find('<'));
  const std::size_t colons = s.rfind("::");
  return colons == std::string_view::npos ? s : s.substr(colons + 2);
#else
  return "module";
#endif
}

/// Finds the dotted name under which `target` is a (nested) child of the visited module.
struct ChildFinder {
  const void* target;
  std::string prefix;
  std::string* found;

  void operator()(std::string_view, Tensor&, TensorKind) const {}
  template <ModuleLike M>
  void operator()(std::string_view name, M& child) const {
    if (!found->empty()) return;
    const std::string full = prefix + std::string(name);
    if (static_cast<const void*>(&child) == target)
      *found = full;
    else
      child.visit(ChildFinder{target, full + ".", found});
  }
};

}  // namespace detail

template <class Derived>
class Module : public detail::ModuleTag {
 public:
  /// Every trainable tensor, in declaration order.
  std::vector<Tensor> parameters() const {
    std::vector<Tensor> out;
    for_each_tensor([&](const std::string&, Tensor& t, TensorKind k) {
      if (k == TensorKind::parameter) out.push_back(t);
    });
    return out;
  }

  /// (name, parameter) pairs with hierarchical names: "conv1.weight", "0.bias".
  std::vector<std::pair<std::string, Tensor>> named_parameters() const {
    std::vector<std::pair<std::string, Tensor>> out;
    for_each_tensor([&](const std::string& n, Tensor& t, TensorKind k) {
      if (k == TensorKind::parameter) out.emplace_back(n, t);
    });
    return out;
  }

  /// (name, buffer) pairs.
  std::vector<std::pair<std::string, Tensor>> named_buffers() const {
    std::vector<std::pair<std::string, Tensor>> out;
    for_each_tensor([&](const std::string& n, Tensor& t, TensorKind k) {
      if (k == TensorKind::buffer) out.emplace_back(n, t);
    });
    return out;
  }

  /// Parameters and buffers by name (the tensors themselves, not copies).
  StateDict state_dict() const {
    StateDict sd;
    for_each_tensor([&](const std::string& n, Tensor& t, TensorKind) { sd.insert(n, t.detach()); });
    return sd;
  }

  /// Copies `sd`'s values into this module's tensors (which keep their identity, so an
  /// optimizer built on parameters() stays valid). With `strict`, a missing or an
  /// unexpected entry is an error; a shape or dtype mismatch always is. Each error
  /// names the entry.
  void load_state_dict(const StateDict& sd, bool strict = true) {
    std::size_t matched = 0;
    for_each_tensor([&](const std::string& n, Tensor& t, TensorKind) {
      if (!sd.contains(n)) {
        TINYNET_CHECK(IndexError, !strict, "load_state_dict: missing entry '", n, "' (shape ", t.shape(), ")");
        return;
      }
      const Tensor& src = sd.at(n);
      TINYNET_CHECK(ShapeError, src.shape() == t.shape(), "load_state_dict: entry '", n, "' has shape ", src.shape(),
                    " but the module's tensor has shape ", t.shape());
      TINYNET_CHECK(TypeError, src.dtype() == t.dtype(), "load_state_dict: entry '", n, "' is ", src.dtype(),
                    " but the module's tensor is ", t.dtype());
      t.copy_(src);
      ++matched;
    });
    if (strict && matched != sd.size()) {
      const StateDict own = state_dict();
      for (const auto& [name, t] : sd)
        TINYNET_CHECK(IndexError, own.contains(name), "load_state_dict: unexpected entry '", name, "' (shape ",
                      t.shape(), ")");
    }
  }

  /// Sets training mode on this module and every child (Dropout, BatchNorm2d depend on it).
  Derived& train(bool on = true) {
    detail::walk(
        derived(), [](const std::string&, Tensor&, TensorKind) {}, [&](auto& m) { m.training_ = on; });
    return derived();
  }
  Derived& eval() { return train(false); }
  bool is_training() const { return training_; }

  /// Resets every parameter's gradient (to none by default, as in PyTorch 2).
  void zero_grad(bool set_to_none = true) {
    for (Tensor& p : parameters()) {
      if (set_to_none)
        p.set_grad(Tensor());
      else if (p.grad().defined())
        p.grad().zero_();
    }
  }

  /// Converts every floating parameter and buffer to `dtype` (float64 for gradient
  /// checks). Do this before building an optimizer: the tensors are replaced.
  /// Requires: dtype is float32 or float64 (checked before anything is converted).
  Derived& to(DType dtype) {
    TINYNET_CHECK(TypeError, is_floating(dtype), "Module::to: modules hold float32 or float64 parameters, got ", dtype,
                  tinynet::detail::compute_dtype_hint(dtype));
    detail::walk(
        derived(),
        [&](const std::string&, Tensor& t, TensorKind) {
          if (!is_floating(t.dtype()) || t.dtype() == dtype) return;
          const bool trainable = t.requires_grad();
          t = t.to(dtype);
          if (trainable) t.requires_grad_();
        },
        detail::ignore_modules);
    return derived();
  }

  /// Moves every parameter and buffer to `device` (like PyTorch's module.to(device)).
  /// Parameters become new leaves there: build optimizers after moving the model.
  Derived& to(Device device) {
    detail::walk(
        derived(),
        [&](const std::string&, Tensor& t, TensorKind) {
          if (t.device() == device) return;
          const bool trainable = t.requires_grad();
          t = t.to(device);
          if (trainable) t.requires_grad_();
        },
        detail::ignore_modules);
    return derived();
  }

  /// Number of trainable scalars.
  std::int64_t num_parameters() const {
    std::int64_t n = 0;
    for (const Tensor& p : parameters()) n += p.numel();
    return n;
  }

  /// Calls forward; layers and models are used as `y = model(x)`. A tinynet::Error leaving
  /// forward gains where it was raised: `(in Net.fc2 [Linear])`.
  template <class... Args>
  decltype(auto) operator()(Args&&... args) {
    try {
      return derived().forward(std::forward<Args>(args)...);
    } catch (Error& e) {
      std::string child;
      if (e.last_module() != nullptr) derived().visit(detail::ChildFinder{e.last_module(), "", &child});
      e.leave_module(&derived(), child, detail::type_name<Derived>());
      throw;
    }
  }

 protected:
  bool training_ = true;

 private:
  template <class>
  friend class Module;
  template <class, class>
  friend struct detail::Walker;
  template <class M, class OnTensor, class OnModule>
  friend void detail::walk(M&, OnTensor&&, OnModule&&);

  Derived& derived() { return static_cast<Derived&>(*this); }

  template <class F>
  void for_each_tensor(F&& f) const {
    // Visiting does not modify the module; visit() is written once, without a const twin.
    auto& self = const_cast<Derived&>(static_cast<const Derived&>(*this));
    detail::walk(self, f, detail::ignore_modules);
  }
};

}  // namespace tinynet::nn
