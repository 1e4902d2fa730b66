#pragma once
// Watching a run: a progress bar while an epoch trains (only when stdout is a terminal),
// and the opt-in metrics files (--metrics-jsonl, --tensorboard). The training loop calls it after
// every training step and after every evaluation. It prints nothing else to stdout, so
// the log lines that parsers read are the same with or without it.

#include <cstdint>
#include <optional>
#include <string>
#include <tinynet/metrics.hpp>
#include <tinynet/optim/optimizer.hpp>
#include <tinynet/tinynet.hpp>

#include "flags.hpp"

namespace job {

/// Test-set loss (mean) and accuracy, as the examples print them.
struct TestResult {
  double loss = 0;
  double accuracy = 0;
};

/// One training step, as the training loop sees it after the optimizer step.
struct StepInfo {
  int epoch;
  std::int64_t batch;             ///< index in the epoch, from 0
  std::int64_t images;            ///< images trained this epoch, this batch included
  double elapsed_s;               ///< seconds since the epoch started
  const tinynet::Tensor& loss;    ///< the batch's mean loss
  const tinynet::Tensor& output;  ///< the model's scores for the batch (argmax: the prediction)
  const tinynet::Tensor& target;  ///< the batch's labels
};

/// Progress bar and metrics files for a training run.
class Monitor {
 public:
  /// `batches`: training batches per epoch. On rank 0 (`writer`; a single process is),
  /// opens the files the options ask for (a resumed run appends to its JSON-lines file) and
  /// draws the bar; the other ranks of a data-parallel job show and write nothing. Keeps a
  /// reference to `optimizer` to read the lr.
  Monitor(const JobOptions& o, bool writer, std::int64_t batches, const tinynet::optim::Optimizer& optimizer)
      : batches_(batches),
        log_interval_(o.log_interval),
        optimizer_(optimizer),
        bar_(stdout, writer && !o.no_progress) {
    if (!writer) return;
    if (!o.metrics_jsonl.empty()) jsonl_.emplace(o.metrics_jsonl, tinynet::metrics::JsonlOptions{.append = o.resume});
    if (!o.tensorboard.empty()) tensorboard_.emplace(o.tensorboard);
  }

  /// After each optimizer step, before the step's log line: redraws the bar, or clears it
  /// when a log line or the test results come next; on logged steps writes a "step" row
  /// (the batch's loss and accuracy, lr, images/s).
  void after_step(const StepInfo& s) {
    const bool logged = s.batch % log_interval_ == 0;
    if (logged || s.batch + 1 == batches_) {
      bar_.clear();
    } else if (bar_.due()) {
      const std::string label = "Epoch " + std::to_string(s.epoch);
      bar_.draw({.label = label,
                 .done = s.batch + 1,
                 .total = batches_,
                 .loss = s.loss.item<float>(),
                 .images_per_second = static_cast<double>(s.images) / s.elapsed_s,
                 .elapsed_s = s.elapsed_s});
    }
    if (!logged || (!jsonl_ && !tensorboard_)) return;
    const std::int64_t step = (s.epoch - 1) * batches_ + s.batch + 1;
    const double loss = s.loss.item<float>();
    const double accuracy = batch_accuracy(s.output, s.target);
    const double images_per_second = static_cast<double>(s.images) / s.elapsed_s;
    const double lr = optimizer_.lr(0);
    const double now = tinynet::metrics::wall_time();
    if (jsonl_)
      jsonl_->write({{"kind", "step"},
                     {"epoch", s.epoch},
                     {"step", step},
                     {"batch", s.batch},
                     {"loss", loss},
                     {"accuracy", accuracy},
                     {"lr", lr},
                     {"images_per_second", images_per_second},
                     {"wall_time", now}});
    if (tensorboard_) {
      tensorboard_->add_scalar("train/loss", loss, step, now);
      tensorboard_->add_scalar("train/accuracy", accuracy, step, now);
      tensorboard_->add_scalar("train/lr", lr, step, now);
      tensorboard_->add_scalar("train/images_per_second", images_per_second, step, now);
    }
  }

  /// Clears the progress bar (training stops before the epoch's end).
  void clear() { bar_.clear(); }

  /// After each epoch's evaluation (before the scheduler steps): an "epoch" row with the
  /// test loss and accuracy, the epoch's lr, its training speed and time.
  void after_epoch(int epoch, const TestResult& r, double train_s, std::int64_t images) {
    const std::int64_t step = epoch * batches_;
    const double images_per_second = static_cast<double>(images) / train_s;
    const double now = tinynet::metrics::wall_time();
    if (jsonl_)
      jsonl_->write({{"kind", "epoch"},
                     {"epoch", epoch},
                     {"step", step},
                     {"loss", r.loss},
                     {"accuracy", r.accuracy},
                     {"lr", optimizer_.lr(0)},
                     {"images_per_second", images_per_second},
                     {"train_s", train_s},
                     {"wall_time", now}});
    if (tensorboard_) {
      tensorboard_->add_scalar("test/loss", r.loss, step, now);
      tensorboard_->add_scalar("test/accuracy", r.accuracy, step, now);
      tensorboard_->add_scalar("epoch/images_per_second", images_per_second, step, now);
    }
  }

 private:
  static double batch_accuracy(const tinynet::Tensor& output, const tinynet::Tensor& target) {
    tinynet::NoGradGuard no_grad;
    const tinynet::Tensor on_device = tinynet::argmax(output, 1);
    const tinynet::Tensor pred = on_device.device().is_cpu() ? on_device : on_device.to(tinynet::Device::cpu());
    std::int64_t correct = 0;
    for (std::int64_t i = 0; i < pred.numel(); ++i)
      correct += pred.data<std::int64_t>()[i] == target.data<std::int64_t>()[i];
    return static_cast<double>(correct) / static_cast<double>(pred.numel());
  }

  std::int64_t batches_;
  std::int64_t log_interval_;
  const tinynet::optim::Optimizer& optimizer_;
  tinynet::metrics::ProgressBar bar_;
  std::optional<tinynet::metrics::JsonlWriter> jsonl_;
  std::optional<tinynet::metrics::TensorBoardWriter> tensorboard_;
};

}  // namespace job
