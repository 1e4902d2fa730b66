#pragma once
/// \file
/// Models to and from PyTorch state_dict files, with their names mapped: tinynet names a
/// Sequential's tensors by position ("0.weight", "2.bias"), PyTorch by attribute
/// ("conv1.weight"). A NameMap pairs them explicitly; without one, loading pairs the
/// file's entries with the model's in order, checking every shape.
///
/// \code
///   tinynet::load_pytorch(net, "mnist_cnn.pt");   // in order, shapes checked
///   const auto names = tinynet::names_in_order(net.state_dict(), {"conv1.weight", "conv1.bias", ...});
///   tinynet::save_pytorch(net, "mnist_cnn.pt", names);  // Net().load_state_dict(torch.load(...)) works
/// \endcode

#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tinynet/io/model.hpp"
#include "tinynet/io/pytorch.hpp"

namespace tinynet {

/// Pairs of (tinynet name, PyTorch name), one per tensor.
using NameMap = std::vector<std::pair<std::string, std::string>>;

namespace io::detail {

/// Throws StateDictError "<source>: <what>: problem; problem; ..." when `problems` is not empty.
inline void throw_problems(const std::vector<std::string>& problems, std::string_view source, std::string_view what) {
  if (problems.empty()) return;
  constexpr std::size_t kMaxListed = 20;
  std::string msg = tinynet::detail::concat(source, ": ", what, ": ");
  for (std::size_t i = 0; i < problems.size() && i < kMaxListed; ++i) msg += (i ? "; " : "") + problems[i];
  if (problems.size() > kMaxListed) msg += tinynet::detail::concat("; and ", problems.size() - kMaxListed, " more");
  throw StateDictError(msg);
}

inline std::string describe(const Tensor& t) { return tinynet::detail::concat(t.dtype(), " ", t.shape()); }

}  // namespace io::detail

/// The map that pairs `ours` (a model's state_dict) with `theirs` names, in order.
/// StateDictError when the counts differ.
inline NameMap names_in_order(const StateDict& ours, const std::vector<std::string>& theirs) {
  if (ours.size() != theirs.size())
    throw StateDictError(tinynet::detail::concat("names_in_order: the model has ", ours.size(), " tensors, ",
                                                 theirs.size(), " names were given"));
  NameMap map;
  std::size_t i = 0;
  for (const auto& [name, t] : ours) map.emplace_back(name, theirs[i++]);
  return map;
}

/// `file` (PyTorch's names) renamed to the names of `model` (a model's own state_dict):
/// through `map` when it is not empty, else by position. Every entry is checked: the
/// StateDictError lists, each by name, the model's tensors the file lacks ("missing"), the
/// file's entries the model has no place for ("unexpected"), and pairs whose shape or
/// dtype differ.
inline StateDict rename_from_pytorch(const StateDict& file, const StateDict& model, const NameMap& map,
                                     std::string_view source) {
  using io::detail::describe;
  std::vector<std::string> problems;
  StateDict out;
  const auto pair = [&](const std::string& ours, const Tensor& want, const std::string& theirs, const Tensor& got) {
    if (!(got.shape() == want.shape()) || got.dtype() != want.dtype())
      problems.push_back(tinynet::detail::concat("wrongly shaped: '", theirs, "' is ", describe(got), " in the file, '",
                                                 ours, "' is ", describe(want), " in the model"));
    else
      out.insert(ours, got);
  };
  if (map.empty()) {
    auto f = file.begin();
    for (const auto& [ours, want] : model) {
      if (f == file.end()) {
        problems.push_back(
            tinynet::detail::concat("missing: '", ours, "' (", describe(want), ") has no entry in the file"));
        continue;
      }
      pair(ours, want, f->first, f->second);
      ++f;
    }
    for (; f != file.end(); ++f)
      problems.push_back(tinynet::detail::concat("unexpected: '", f->first, "' (", describe(f->second),
                                                 ") has no tensor in the model"));
  } else {
    std::unordered_set<std::string> mapped_ours, mapped_theirs;
    for (const auto& [ours, theirs] : map) {
      mapped_ours.insert(ours), mapped_theirs.insert(theirs);
      if (!model.contains(ours)) {
        problems.push_back(tinynet::detail::concat("the name map names '", ours, "', which the model does not have"));
      } else if (!file.contains(theirs)) {
        problems.push_back(tinynet::detail::concat("missing: '", theirs, "' (for the model's '", ours, "', ",
                                                   describe(model.at(ours)), ") is not in the file"));
      } else {
        pair(ours, model.at(ours), theirs, file.at(theirs));
      }
    }
    for (const auto& [ours, want] : model)
      if (!mapped_ours.contains(ours))
        problems.push_back(
            tinynet::detail::concat("missing: the model's '", ours, "' (", describe(want), ") is not in the name map"));
    for (const auto& [theirs, got] : file)
      if (!mapped_theirs.contains(theirs))
        problems.push_back(
            tinynet::detail::concat("unexpected: '", theirs, "' (", describe(got), ") is not in the name map"));
  }
  io::detail::throw_problems(problems, source, "the PyTorch state_dict does not match the model");
  return out;
}

/// `sd` (a model's state_dict) under PyTorch's names from `map`; every entry must be mapped.
inline StateDict rename_to_pytorch(const StateDict& sd, const NameMap& map, std::string_view source) {
  std::vector<std::string> problems;
  StateDict out;
  std::unordered_set<std::string> mapped;
  for (const auto& [ours, theirs] : map) {
    mapped.insert(ours);
    if (!sd.contains(ours))
      problems.push_back(tinynet::detail::concat("the name map names '", ours, "', which the model does not have"));
    else if (out.contains(theirs))
      problems.push_back(tinynet::detail::concat("the name map gives '", theirs, "' twice"));
    else
      out.insert(theirs, sd.at(ours));
  }
  for (const auto& [ours, t] : sd)
    if (!mapped.contains(ours))
      problems.push_back(
          tinynet::detail::concat("the model's '", ours, "' (", io::detail::describe(t), ") is not in the name map"));
  io::detail::throw_problems(problems, source, "cannot name the model's tensors");
  return out;
}

/// Loads the PyTorch state_dict file at `path` into `model`, through `map` (tinynet name,
/// PyTorch name) or, when it is empty, pairing the entries in order. The model is changed
/// only when every entry fits (see rename_from_pytorch). FileError / FormatError as for
/// load_pytorch_state_dict.
template <Stateful M>
void load_pytorch(M& model, const std::filesystem::path& path, const NameMap& map = {}) {
  const StateDict file = load_pytorch_state_dict(path);
  model.load_state_dict(
      rename_from_pytorch(file, model.state_dict(), map, io::detail::file_source("load_pytorch", path)));
}

/// Writes `model` to `path` as a PyTorch state_dict file (torch.load(path,
/// weights_only=True) reads it) under the PyTorch names of `map`, or tinynet's own names
/// when it is empty. Atomic, as save.
template <Stateful M>
void save_pytorch(const M& model, const std::filesystem::path& path, const NameMap& map = {}) {
  const std::string source = io::detail::file_source("save_pytorch", path);
  save_pytorch_state_dict(map.empty() ? model.state_dict() : rename_to_pytorch(model.state_dict(), map, source), path);
}

}  // namespace tinynet
