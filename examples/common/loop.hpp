#pragma once
// The epochs of a training job, as every example runs them: resume from --resume's
// checkpoint, skip the batches a stopped epoch had done, stop at a batch boundary when a
// signal arrives (every rank agreeing), the loss lines and metrics, the test after each
// epoch on rank 0, the checkpoint after it. What differs between examples (the step, the
// test, an epoch's scheduler step) comes in as callables.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <tinynet/io/io.hpp>
#include <tinynet/tinynet.hpp>

#include "checkpoints.hpp"
#include "distributed.hpp"
#include "exit_codes.hpp"
#include "flags.hpp"
#include "monitor.hpp"
#include "outputs.hpp"
#include "stop.hpp"
#include "training.hpp"

namespace job {

/// What one training step gives back, for the loss lines and the metrics.
struct StepResult {
  tinynet::Tensor output, loss;
};

/// What a training job is made of: the model, its optimizer and scheduler (saved in the
/// checkpoint), the training batches (`batches` of them an epoch, --limit-train-batches
/// applied) and `configuration`, the flags that decide a checkpoint's contents ("--model
/// net, --optimizer sgd"), for the error when --resume finds another configuration's.
template <class Model, class Optimizer, class Scheduler, class Loader>
struct Training {
  Model& model;
  Optimizer& optimizer;
  Scheduler& scheduler;
  Loader& train_loader;
  std::int64_t batches;
  std::string configuration;
};

/// Runs epochs until --epochs: `step(batch)` trains on one batch and returns its StepResult;
/// `test_model()` returns the epoch's TestResult (called on rank 0 only); `end_of_epoch()`
/// runs after the test and before the checkpoint (an epoch scheduler steps there). A batch's
/// position within its epoch decides what a resumed run skips: an epoch's order depends only
/// on the seed and the epoch, so the run goes on as if never stopped. Returns kExitOk, or
/// 128 + the signal that stopped it (its progress written to the checkpoint).
template <class Model, class Optimizer, class Scheduler, class Loader, class Step, class TestModel, class EndOfEpoch>
int train_epochs(const JobOptions& o, const Distributed& dist, Training<Model, Optimizer, Scheduler, Loader> t,
                 Step&& step, TestModel&& test_model, EndOfEpoch&& end_of_epoch) {
  const std::filesystem::path checkpoint = checkpoint_file(o);
  int first_epoch = 1;
  std::int64_t skip_batches = 0;
  if (o.resume && std::filesystem::exists(checkpoint)) {
    const tinynet::TrainingProgress done = resume(checkpoint, t.configuration, t.model, t.optimizer, t.scheduler);
    first_epoch = static_cast<int>(done.epoch) + 1;
    skip_batches = done.step;
  }

  Monitor monitor(o, dist.is_main(), t.batches, t.optimizer);
  stop_at_batch_boundaries();
  for (int epoch = first_epoch; epoch <= o.epochs; ++epoch) {
    t.model.train();
    t.train_loader.set_epoch(epoch);
    const Clock::time_point start = Clock::now();
    std::int64_t batch_idx = 0, images = 0;
    for (auto& batch : t.train_loader) {
      if (batch_idx == t.batches) break;
      if (epoch == first_epoch && batch_idx < skip_batches) {
        ++batch_idx;
        continue;
      }
      if (const int sig = agreed_stop(dist, batch_idx)) {
        monitor.clear();
        return stop_training(o, dist, sig, {.epoch = epoch - 1, .step = batch_idx}, checkpoint, t.model, t.optimizer,
                             t.scheduler);
      }
      const StepResult r = step(batch);
      images += batch.target.numel();
      monitor.after_step({epoch, batch_idx, images, seconds_since(start), r.loss, r.output, batch.target});
      if (batch_idx % o.log_interval == 0 && dist.is_main()) print_loss_line(epoch, batch_idx, t.batches, r.loss);
      ++batch_idx;
    }
    const double train_s = seconds_since(start);
    const Clock::time_point test_start = Clock::now();
    if (dist.is_main()) monitor.after_epoch(epoch, test_model(), train_s, images);
    std::fprintf(stderr, "%sEpoch %d: trained in %.2f s (%.0f images/s), tested in %.2f s\n", dist.prefix().c_str(),
                 epoch, train_s, static_cast<double>(images) / train_s, seconds_since(test_start));
    end_of_epoch();
    if (!checkpoint.empty() && dist.is_main())
      save_checkpoint(checkpoint, t.model, t.optimizer, t.scheduler, tinynet::default_generator(),
                      {.epoch = epoch, .step = 0});
  }
  finish_distributed(dist);
  return kExitOk;
}

}  // namespace job
