#pragma once
/// \file
/// Model weight files: save(model, path) / load(model, path) for anything Stateful
/// (like torch.save(model.state_dict(), f) / model.load_state_dict(torch.load(f))).

#include <concepts>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "tinynet/core/state_dict.hpp"
#include "tinynet/io/state_dict_file.hpp"

namespace tinynet {

/// Something whose state is a StateDict: models, optimizers, schedulers.
/// Requires `m.state_dict()` callable on a const object, returning a StateDict, and
/// `m.load_state_dict(sd)` accepting a const StateDict&.
template <typename M>
concept Stateful = requires(const M& cm, M& m, const StateDict& sd) {
  { cm.state_dict() } -> std::convertible_to<StateDict>;
  m.load_state_dict(sd);
};

namespace io::detail {

/// Throws StateDictError, prefixed with `source`, listing every way `file` differs from
/// `expected` (an object's own state_dict): entries missing from the file, entries the
/// object does not have, and entries whose shape or dtype differ. Each names its tensor.
inline void check_state_dict_matches(const StateDict& expected, const StateDict& file, std::string_view source) {
  constexpr std::size_t kMaxListed = 20;
  std::vector<std::string> problems;
  for (const auto& [name, want] : expected) {
    if (!file.contains(name)) {
      problems.push_back(
          tinynet::detail::concat("missing entry '", name, "' (the model has ", want.dtype(), " ", want.shape(), ")"));
      continue;
    }
    const Tensor& got = file.at(name);
    if (got.dtype() != want.dtype())
      problems.push_back(tinynet::detail::concat("entry '", name, "' is ", got.dtype(), " in the file, ", want.dtype(),
                                                 " in the model"));
    if (!(got.shape() == want.shape()))
      problems.push_back(tinynet::detail::concat("entry '", name, "' has shape ", got.shape(), " in the file, ",
                                                 want.shape(), " in the model"));
  }
  for (const auto& [name, got] : file)
    if (!expected.contains(name))
      problems.push_back(tinynet::detail::concat("unexpected entry '", name, "' (", got.dtype(), " ", got.shape(),
                                                 "), which the model does not have"));
  if (problems.empty()) return;
  std::string msg = tinynet::detail::concat(source, ": the file does not match the model: ");
  for (std::size_t i = 0; i < problems.size() && i < kMaxListed; ++i) msg += (i ? "; " : "") + problems[i];
  if (problems.size() > kMaxListed) msg += tinynet::detail::concat("; and ", problems.size() - kMaxListed, " more");
  throw StateDictError(msg);
}

}  // namespace io::detail

/// Writes `model.state_dict()` to `path` as a weights file, atomically (a file already
/// there is untouched on error). Throws FileError when the system refuses.
template <Stateful M>
void save(const M& model, const std::filesystem::path& path) {
  io::detail::write_file(model.state_dict(), FileKind::weights, path, "save");
}

/// Loads the weights file at `path` into `model`. Before calling model.load_state_dict,
/// checks the file's entries against model.state_dict(): every mismatch (missing or
/// unexpected entry, shape or dtype) is listed in one StateDictError naming each tensor,
/// and the model is not touched. FileError / FormatError as for load_state_dict_file;
/// a checkpoint file is a FormatError pointing to load_checkpoint.
template <Stateful M>
void load(M& model, const std::filesystem::path& path) {
  io::detail::Decoded file = io::detail::read_file(path, "load");
  const std::string source = io::detail::file_source("load", path);
  if (file.kind != FileKind::weights)
    io::detail::fail_format(source, "is a ", file_kind_name(file.kind),
                            " file, not a weights file: read it with load_checkpoint (its model is the "
                            "checkpoint's .model)");
  io::detail::check_state_dict_matches(model.state_dict(), file.state_dict, source);
  model.load_state_dict(file.state_dict);
}

}  // namespace tinynet
