#pragma once
/// \file
/// StateDict: named tensors in insertion order, the unit that models, optimizers,
/// schedulers and checkpoints save and load (PyTorch's state_dict OrderedDict).
/// Scalars (a step count, a learning rate) are stored as rank-0 int64 / float64 tensors.

#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tinynet/core/creation.hpp"

namespace tinynet {

class StateDict {
 public:
  using Entry = std::pair<std::string, Tensor>;

  /// Adds `name`; throws ValueError if it is already present.
  void insert(std::string name, Tensor t) {
    TINYNET_CHECK(ValueError, !contains(name), "state_dict: duplicate entry '", name, "'");
    index_.emplace(name, entries_.size());
    entries_.emplace_back(std::move(name), std::move(t));
  }
  void insert_scalar(std::string name, double v) { insert(std::move(name), scalar_tensor(v, {DType::float64})); }
  void insert_int(std::string name, std::int64_t v) {
    Tensor t(Shape{}, {DType::int64, Device::cpu(), false});
    *t.data<std::int64_t>() = v;  // exact: not through double
    insert(std::move(name), std::move(t));
  }

  bool contains(std::string_view name) const { return index_.find(std::string(name)) != index_.end(); }
  /// The entry `name`; IndexError naming it when absent.
  const Tensor& at(std::string_view name) const& { return entries_[position(name)].second; }
  /// On a temporary (`model.state_dict().at(name)`) the entry is returned as a handle by
  /// value: a reference would dangle once the dictionary is destroyed at the end of the
  /// full expression, and `const Tensor& t = ...` would then read freed memory.
  Tensor at(std::string_view name) const&& { return entries_[position(name)].second; }
  double scalar(std::string_view name) const { return at(name).item<double>(); }
  std::int64_t integer(std::string_view name) const {
    const Tensor& t = at(name);
    TINYNET_CHECK(TypeError, t.dtype() == DType::int64 && t.numel() == 1, "state_dict: entry '", name,
                  "' is not an int64 scalar (", t.dtype(), " ", t.shape(), ")");
    return *t.data<std::int64_t>();
  }

  /// Entries whose names start with `prefix`, with the prefix removed.
  StateDict sub(std::string_view prefix) const {
    StateDict out;
    for (const auto& [name, t] : entries_)
      if (name.size() >= prefix.size() && name.compare(0, prefix.size(), prefix) == 0)
        out.insert(name.substr(prefix.size()), t);
    return out;
  }
  /// Adds every entry of `other` under `prefix`.
  void merge(std::string_view prefix, const StateDict& other) {
    for (const auto& [name, t] : other.entries_) insert(std::string(prefix) + name, t);
  }

  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  auto begin() const& { return entries_.begin(); }
  auto end() const& { return entries_.end(); }
  // Iterators into a temporary would dangle; a range-for over one is still fine, since
  // it names the temporary and so calls the overloads above.
  void begin() const&& = delete;
  void end() const&& = delete;

 private:
  std::size_t position(std::string_view name) const {
    auto it = index_.find(std::string(name));
    TINYNET_CHECK(IndexError, it != index_.end(), "state_dict: no entry named '", name, "'");
    return it->second;
  }

  std::vector<Entry> entries_;
  std::unordered_map<std::string, std::size_t> index_;
};

}  // namespace tinynet
