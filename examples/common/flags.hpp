#pragma once
// The flags every training example shares (batch size, epochs, threads, autocast,
// checkpoints, data-parallel settings, metrics files), their checks, and the options
// struct they fill. Each example derives its own options from JobOptions, giving it the
// recipe's defaults (JobDefaults), and adds its own flags after add_job_flags.

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <string>
#include <utility>

namespace job {

/// The defaults that belong to an example's recipe rather than to the job.
struct JobDefaults {
  std::int64_t batch_size;
  std::int64_t test_batch_size = 1000;
  int epochs;
  double lr;
  std::string model_path;  // --save-model's file
};

/// What every training job is told by its flags.
struct JobOptions {
  explicit JobOptions(JobDefaults d)
      : batch_size(d.batch_size),
        test_batch_size(d.test_batch_size),
        epochs(d.epochs),
        lr(d.lr),
        model_path(std::move(d.model_path)) {}
  std::int64_t batch_size;
  std::int64_t test_batch_size;
  int epochs;
  double lr;
  bool no_cuda = false;
  std::uint64_t seed = 1;
  std::int64_t log_interval = 10;
  bool save_model = false;
  std::string backend = "gloo";
  double dist_timeout = 1800;
  std::string data_dir = "data";
  int threads = 0;
  bool keep_denormals = false;
  std::string autocast = "off";
  std::string checkpoint_dir;
  bool resume = false;
  std::int64_t limit_train_batches = 0;
  std::string model_path;
  std::string metrics_jsonl;
  std::string tensorboard;
  bool no_progress = false;
};

/// A whole-number flag within [lo, hi], written in decimal. CLI11's own conversion takes
/// an out-of-range number as the type's largest value (strtoll saturates), reads "010" as
/// octal and "-1" as a huge unsigned number; this refuses all of them, naming the range,
/// and hands CLI11 the canonical decimal form (so declare it with transform(), not check()).
template <class T>
CLI::Validator whole_number_in(T lo, T hi) {
  const std::string range = std::to_string(lo) + " to " + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& s) -> std::string {
        T v{};
        const char* first = s.data();
        const char* last = s.data() + s.size();
        if (first != last && *first == '+') ++first;
        const auto [end, ec] = std::from_chars(first, last, v);
        if (ec != std::errc() || end != last || v < lo || v > hi)
          return "must be a whole number from " + range + ", got " + s;
        s = std::to_string(v);
        return {};
      },
      "INT in " + range);
}

/// `v` as a person writes it: 1000, 0.5.
inline std::string format_number(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

/// A real-number flag within (lo, hi] (or [lo, hi] when `lo_included`): finite, so inf
/// and nan are refused, naming the range.
inline CLI::Validator real_number_in(double lo, double hi, bool lo_included) {
  const std::string range = (lo_included ? "[" : "(") + format_number(lo) + ", " + format_number(hi) + "]";
  return CLI::Validator(
      [lo, hi, lo_included, range](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        const bool ok = !s.empty() && end == s.c_str() + s.size() && std::isfinite(v) &&
                        (lo_included ? v >= lo : v > lo) && v <= hi;
        return ok ? std::string() : "must be a finite number in " + range + ", got " + s;
      },
      "NUMBER in " + range);
}

/// The limits of the numeric flags (docs/mnist.md lists them).
inline constexpr std::int64_t kMaxBatchSize = 65536;  ///< more than a data set's 60000 images: one batch
inline constexpr int kMaxEpochs = 100000;
inline constexpr double kMaxLr = 1000;
inline constexpr std::int64_t kMaxCount = 1000000000;  ///< --log-interval, --limit-train-batches
inline constexpr int kMaxThreads = 1024;
inline constexpr double kMinDistTimeout = 1;      ///< seconds: shorter fails rendezvous on a busy machine
inline constexpr double kMaxDistTimeout = 86400;  ///< a day: longer would hold a wedged job's machines for days

/// Declares the shared flags on `app`, writing into `o`; the defaults shown are `o`'s.
inline void add_job_flags(CLI::App& app, JobOptions& o) {
  app.add_option("--batch-size", o.batch_size, "input batch size for training")
      ->transform(whole_number_in<std::int64_t>(1, kMaxBatchSize))
      ->capture_default_str();
  app.add_option("--test-batch-size", o.test_batch_size, "input batch size for testing")
      ->transform(whole_number_in<std::int64_t>(1, kMaxBatchSize))
      ->capture_default_str();
  app.add_option("--epochs", o.epochs, "number of epochs to train")
      ->transform(whole_number_in(1, kMaxEpochs))
      ->capture_default_str();
  app.add_option("--lr", o.lr, "learning rate")->check(real_number_in(0, kMaxLr, false))->capture_default_str();
  app.add_flag("--no-cuda", o.no_cuda, "disables CUDA training");
  app.add_option("--seed", o.seed, "random seed")
      ->transform(whole_number_in<std::uint64_t>(0, std::numeric_limits<std::uint64_t>::max()))
      ->capture_default_str();
  app.add_option("--log-interval", o.log_interval, "how many batches to wait before logging training status")
      ->transform(whole_number_in<std::int64_t>(1, kMaxCount))
      ->capture_default_str();
  app.add_flag("--save-model", o.save_model, "save the trained model to --model-path");
  app.add_option("--backend", o.backend,
                 "data-parallel backend (gloo: CPU ranks over TCP, when WORLD_SIZE > 1; nccl: one GPU per rank, "
                 "cuda:LOCAL_RANK, in the nvcc build only)")
      ->check(CLI::IsMember({"gloo", "nccl"}))
      ->capture_default_str();
  app.add_option("--dist-timeout", o.dist_timeout,
                 "seconds a data-parallel rank waits for the others (start-up and every collective) before it "
                 "gives up with exit code 201")
      ->check(real_number_in(kMinDistTimeout, kMaxDistTimeout, true))
      ->capture_default_str();
  app.add_option("--data-dir", o.data_dir, "where the data sets are (fetched there when missing)")
      ->capture_default_str();
  app.add_option("--threads", o.threads,
                 "CPU threads (default: TINYNET_NUM_THREADS, else OMP_NUM_THREADS, else all cores)")
      ->transform(whole_number_in(1, kMaxThreads));
  app.add_option("--autocast", o.autocast,
                 "mixed precision: forward and loss under tinynet::autocast, conv2d and linear multiplying in "
                 "bfloat16 with float32 sums (as torch.autocast(device_type, dtype=torch.bfloat16))")
      ->check(CLI::IsMember({"off", "bf16"}))
      ->capture_default_str();
  app.add_flag("--keep-denormals", o.keep_denormals,
               "compute with denormal floats instead of flushing them to zero (PyTorch's default; up to "
               "1.5x slower once gradients get tiny)");
  app.add_option("--checkpoint-dir", o.checkpoint_dir, "write a checkpoint there after every epoch");
  app.add_flag("--resume", o.resume, "continue from the checkpoint in --checkpoint-dir, if there is one")
      ->needs(app.get_option("--checkpoint-dir"));
  app.add_option("--limit-train-batches", o.limit_train_batches, "train on at most this many batches per epoch")
      ->transform(whole_number_in<std::int64_t>(1, kMaxCount));
  app.add_option("--model-path", o.model_path, "file that --save-model writes")->capture_default_str();
  app.add_option("--metrics-jsonl", o.metrics_jsonl,
                 "write a JSON object per logged step and per epoch to this file (appended to with --resume)");
  app.add_option("--tensorboard", o.tensorboard, "write TensorBoard event files into this directory");
  app.add_flag("--no-progress", o.no_progress, "no progress bar (it is shown only when stdout is a terminal)");
}

}  // namespace job
