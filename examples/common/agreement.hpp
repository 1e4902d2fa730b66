#pragma once
// Before they load data, the ranks of a data-parallel job check that they were started
// alike. Ranks that differ in --lr or --seed would train together silently, in
// --batch-size or --limit-train-batches they would pair one rank's epochs with another's
// and end in timeouts, and with per-rank checkpoint directories at different epochs
// rank 0 would train against rank 1's epoch. The model's shape alone is compared by
// DistributedDataParallel; this compares everything else that must match.

#include <cstdio>
#include <filesystem>
#include <string>
#include <tinynet/data/checksum.hpp>
#include <tinynet/data/sources.hpp>
#include <tinynet/dist/ddp.hpp>
#include <tinynet/io/checkpoint.hpp>
#include <utility>
#include <vector>

#include "distributed.hpp"
#include "flags.hpp"
#include "outputs.hpp"

namespace job {

/// One setting that every rank must share: the flag (or what it stands for) and its value.
using Setting = std::pair<std::string, std::string>;

/// `v` exactly, so that values differing in the last bit differ here too.
inline std::string exact(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

/// What --resume would continue from: "none", or the checkpoint's epochs and batches done
/// and the MD5 of its bytes.
inline std::string checkpoint_identity(const JobOptions& o) {
  const std::string file = checkpoint_file(o);
  std::error_code ec;
  if (!o.resume || !std::filesystem::exists(file, ec)) return "none";
  const tinynet::Checkpoint c = tinynet::load_checkpoint(file);
  return "epoch " + std::to_string(c.epoch) + " and " + std::to_string(c.step) + " batches done, MD5 " +
         tinynet::data::content_md5(file);
}

/// The MD5s of a data set's files, as one value.
inline std::string data_md5s(const tinynet::data::DatasetSources& sources) {
  std::string md5s;
  for (const auto& f : sources.files) md5s += (md5s.empty() ? "" : " ") + f.md5;
  return md5s;
}

/// The shared flags that must match across ranks (an example puts its own before them).
inline std::vector<Setting> job_settings(const JobOptions& o) {
  return {{"--batch-size", std::to_string(o.batch_size)},
          {"--limit-train-batches", o.limit_train_batches > 0 ? std::to_string(o.limit_train_batches) : "none"},
          {"--seed", std::to_string(o.seed)},
          {"--epochs", std::to_string(o.epochs)},
          {"--autocast", o.autocast},
          {"--resume", o.resume ? "yes" : "no"},
          {"the checkpoint --resume continues from", checkpoint_identity(o)}};
}

/// The settings as text, one "name=value" line each (what the ranks exchange).
inline std::string settings_text(const std::vector<Setting>& settings) {
  std::string text;
  for (const auto& [name, value] : settings) text += name + "=" + value + "\n";
  return text;
}

/// Throws DistConfigError (exit code 2) on every rank when some rank's settings differ
/// from `mine`, naming the first setting that differs, both values and the other
/// rank. Each rank publishes its settings in the store and all-gathers a hash of them
/// (a fixed size on every rank, so safe before they are known to agree); a rank that sees
/// a different hash reads that rank's settings to say what differs.
inline void agree_on_settings(const std::vector<Setting>& mine, const Distributed& d) {
  if (!d.group) return;
  tinynet::dist::ProcessGroup& pg = *d.group;
  const std::string text = settings_text(mine);
  pg.store().set("job/settings/" + std::to_string(d.rank), text);
  const auto hash = static_cast<std::int64_t>(tinynet::dist::detail::fnv1a(text));
  const tinynet::Tensor h = tinynet::from_vector<std::int64_t>({hash}, {1}, {tinynet::DType::int64, d.device});
  tinynet::Tensor all = tinynet::empty({pg.size()}, {tinynet::DType::int64, d.device});
  pg.allgather(h, all);
  const tinynet::Tensor hashes = all.device().is_cpu() ? all : all.to(tinynet::Device::cpu());
  for (int r = 0; r < pg.size(); ++r) {
    if (hashes.data<std::int64_t>()[r] == hash) continue;
    const std::vector<std::string> theirs =
        tinynet::dist::detail::split_lines(pg.store().get("job/settings/" + std::to_string(r)));
    std::string differs = "the settings (rank " + std::to_string(r) + " runs another build?)";
    for (std::size_t i = 0; i < mine.size(); ++i) {
      const std::string line = mine[i].first + "=" + mine[i].second;
      if (i < theirs.size() && theirs[i] == line) continue;
      const std::string prefix = mine[i].first + "=";
      const std::string other =
          i < theirs.size() && theirs[i].starts_with(prefix) ? theirs[i].substr(prefix.size()) : "(not given)";
      differs = mine[i].first + ": " + mine[i].second + " here, " + other + " on rank " + std::to_string(r);
      break;
    }
    // Everyone has seen the same hashes and reads what it compares with before anyone
    // exits (rank 0's exit takes the store with it).
    try {
      pg.barrier();
    } catch (const tinynet::dist::DistError&) {
      // A rank gone already: the disagreement is still the error to report.
    }
    throw tinynet::dist::DistConfigError("rank " + std::to_string(d.rank) + ": the ranks disagree on " + differs +
                                         "; start every rank with the same flags (and, with --resume, the same "
                                         "checkpoint: a --checkpoint-dir every rank sees)");
  }
}

}  // namespace job
