#pragma once
/// \file
/// Training checkpoints: model, optimizer and scheduler state, epoch, step and the RNG
/// state in one file, so that a resumed run computes the same numbers as one that never
/// stopped. A checkpoint is stored as one StateDict (same format as weights, kind 2):
/// ```
///   epoch, step                int64 scalars
///   rng.seed, rng.offset       int64 scalars holding the Generator's uint64 seed and offset
///                              (two's complement: the bit pattern is kept)
///   model.<name>               the model's state_dict entries
///   optimizer.<name>           the optimizer's
///   scheduler.<name>           the scheduler's
/// ```
/// Any of the three state dicts may be empty; nothing else may appear.

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tinynet/core/random.hpp"
#include "tinynet/io/model.hpp"

namespace tinynet {

/// Everything a training loop needs to resume.
struct Checkpoint {
  StateDict model;
  StateDict optimizer;
  StateDict scheduler;
  std::int64_t epoch = 0;
  std::int64_t step = 0;
  std::uint64_t rng_seed = 0;    ///< Generator::seed()
  std::uint64_t rng_offset = 0;  ///< Generator::offset()
};

/// Where a resumed loop continues; what the one-line save and load pass around.
struct TrainingProgress {
  std::int64_t epoch = 0;
  std::int64_t step = 0;
};

namespace io::detail {

inline constexpr std::string_view kModelPrefix = "model.";
inline constexpr std::string_view kOptimizerPrefix = "optimizer.";
inline constexpr std::string_view kSchedulerPrefix = "scheduler.";
inline constexpr std::string_view kScalarNames[] = {"epoch", "step", "rng.seed", "rng.offset"};

/// A rank-0 int64 tensor holding `v` exactly (StateDict::insert_int goes through double).
inline Tensor int64_scalar(std::int64_t v) {
  Tensor t(Shape{}, {DType::int64, Device::cpu(), false});
  *t.data<std::int64_t>() = v;
  return t;
}

inline StateDict checkpoint_to_state_dict(const Checkpoint& c) {
  StateDict sd;
  sd.insert("epoch", int64_scalar(c.epoch));
  sd.insert("step", int64_scalar(c.step));
  sd.insert("rng.seed", int64_scalar(static_cast<std::int64_t>(c.rng_seed)));
  sd.insert("rng.offset", int64_scalar(static_cast<std::int64_t>(c.rng_offset)));
  sd.merge(kModelPrefix, c.model);
  sd.merge(kOptimizerPrefix, c.optimizer);
  sd.merge(kSchedulerPrefix, c.scheduler);
  return sd;
}

inline bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

/// Splits a decoded checkpoint file back into a Checkpoint; FormatError for a weights
/// file, a missing or malformed scalar, or an entry outside the layout above.
inline Checkpoint checkpoint_from_file(Decoded file, std::string_view source) {
  if (file.kind != FileKind::checkpoint)
    fail_format(source, "is a ", file_kind_name(file.kind),
                " file, not a checkpoint: read it with load (or load_state_dict_file)");
  Checkpoint c;
  std::int64_t scalars[4] = {};
  bool seen[4] = {};
  for (const auto& [name, t] : file.state_dict) {
    if (starts_with(name, kModelPrefix)) {
      c.model.insert(name.substr(kModelPrefix.size()), t);
    } else if (starts_with(name, kOptimizerPrefix)) {
      c.optimizer.insert(name.substr(kOptimizerPrefix.size()), t);
    } else if (starts_with(name, kSchedulerPrefix)) {
      c.scheduler.insert(name.substr(kSchedulerPrefix.size()), t);
    } else {
      std::size_t i = 0;
      while (i < 4 && name != kScalarNames[i]) ++i;
      if (i == 4)
        fail_format(source, "unexpected checkpoint entry '", printable(name),
                    "' (a checkpoint holds epoch, step, rng.seed, rng.offset, model.*, optimizer.*, scheduler.*)");
      if (t.dtype() != DType::int64 || t.dim() != 0)
        fail_format(source, "checkpoint entry '", name, "' must be an int64 scalar, got ", t.dtype(), " ", t.shape());
      scalars[i] = *t.data<std::int64_t>();
      seen[i] = true;
    }
  }
  for (std::size_t i = 0; i < 4; ++i)
    if (!seen[i]) fail_format(source, "checkpoint entry '", kScalarNames[i], "' is missing");
  c.epoch = scalars[0];
  c.step = scalars[1];
  c.rng_seed = static_cast<std::uint64_t>(scalars[2]);
  c.rng_offset = static_cast<std::uint64_t>(scalars[3]);
  return c;
}

}  // namespace io::detail

/// Writes `c` to `path`, atomically and durably (a file already there is untouched on
/// error). Throws FileError when the system refuses.
inline void save_checkpoint(const std::filesystem::path& path, const Checkpoint& c) {
  io::detail::write_file(io::detail::checkpoint_to_state_dict(c), FileKind::checkpoint, path, "save_checkpoint");
}

/// Reads the checkpoint at `path`. FileError / FormatError as for load_state_dict_file;
/// FormatError too for a weights file or an entry outside the checkpoint layout.
inline Checkpoint load_checkpoint(const std::filesystem::path& path) {
  return io::detail::checkpoint_from_file(io::detail::read_file(path, "load_checkpoint"),
                                          io::detail::file_source("load_checkpoint", path));
}

/// Decodes a checkpoint file image held in memory, with every check of load_checkpoint.
inline Checkpoint load_checkpoint_from_bytes(std::span<const std::byte> bytes, std::string_view source = "<memory>") {
  const std::string src = tinynet::detail::concat("load_checkpoint_from_bytes: ", source);
  return io::detail::checkpoint_from_file(io::detail::decode_file(bytes, src), src);
}

/// One line to save a training run:
/// `save_checkpoint(path, model, optimizer, scheduler, gen, {.epoch = e, .step = s});`
template <Stateful Model, Stateful Optimizer, Stateful Scheduler>
void save_checkpoint(const std::filesystem::path& path, const Model& model, const Optimizer& optimizer,
                     const Scheduler& scheduler, const Generator& gen, TrainingProgress progress) {
  save_checkpoint(path, Checkpoint{model.state_dict(), optimizer.state_dict(), scheduler.state_dict(), progress.epoch,
                                   progress.step, gen.seed(), gen.offset()});
}

/// As above, for a run without a scheduler.
template <Stateful Model, Stateful Optimizer>
void save_checkpoint(const std::filesystem::path& path, const Model& model, const Optimizer& optimizer,
                     const Generator& gen, TrainingProgress progress) {
  save_checkpoint(path, Checkpoint{model.state_dict(), optimizer.state_dict(), StateDict{}, progress.epoch,
                                   progress.step, gen.seed(), gen.offset()});
}

/// One line to resume: `auto [epoch, step] = load_checkpoint(path, model, optimizer, scheduler, gen);`
/// The model's entries are checked against model.state_dict() first (StateDictError
/// naming each mismatch; nothing is loaded then). The optimizer's and scheduler's state
/// may legitimately differ in layout from a fresh object's (buffers created on the first
/// step), so their own load_state_dict judges them; if one of those throws, the objects
/// before it have already been loaded. Then `gen` gets the saved seed and offset.
template <Stateful Model, Stateful Optimizer, Stateful Scheduler>
TrainingProgress load_checkpoint(const std::filesystem::path& path, Model& model, Optimizer& optimizer,
                                 Scheduler& scheduler, Generator& gen) {
  const Checkpoint c = load_checkpoint(path);
  io::detail::check_state_dict_matches(model.state_dict(), c.model, io::detail::file_source("load_checkpoint", path));
  model.load_state_dict(c.model);
  optimizer.load_state_dict(c.optimizer);
  scheduler.load_state_dict(c.scheduler);
  gen.set_state(c.rng_seed, c.rng_offset);
  return {c.epoch, c.step};
}

/// As above, for a run without a scheduler; a checkpoint that holds scheduler state is a
/// StateDictError (it would be silently dropped).
template <Stateful Model, Stateful Optimizer>
TrainingProgress load_checkpoint(const std::filesystem::path& path, Model& model, Optimizer& optimizer,
                                 Generator& gen) {
  const Checkpoint c = load_checkpoint(path);
  const std::string source = io::detail::file_source("load_checkpoint", path);
  TINYNET_CHECK(StateDictError, c.scheduler.empty(), source, ": the checkpoint holds scheduler state (",
                c.scheduler.size(), " entries) but no scheduler was given to load it into");
  io::detail::check_state_dict_matches(model.state_dict(), c.model, source);
  model.load_state_dict(c.model);
  optimizer.load_state_dict(c.optimizer);
  gen.set_state(c.rng_seed, c.rng_offset);
  return {c.epoch, c.step};
}

}  // namespace tinynet
