#pragma once
// Command-line flags of the ResNet trainer: the shared training-job flags (as
// examples/mnist's) and the recipe's own.

#include <CLI/CLI.hpp>
#include <string>

#include "../common/flags.hpp"

namespace resnet {

struct Options : job::JobOptions {
  // He et al.'s CIFAR recipe, shortened by a one-cycle schedule.
  Options() : JobOptions({.batch_size = 128, .epochs = 20, .lr = 0.1, .model_path = "resnet20.tnet"}) {}
  std::string dataset = "fashion-mnist";
  std::string augment = "auto";
  double momentum = 0.9;
  bool nesterov = true;
  double weight_decay = 5e-4;
  std::string schedule = "onecycle";
  double label_smoothing = 0.0;
  std::string evaluate;
};

/// Declares every flag on `app`, writing into `o`.
inline void add_flags(CLI::App& app, Options& o) {
  job::add_job_flags(app, o);
  app.add_option("--dataset", o.dataset,
                 "data set: fashion-mnist and mnist (1x28x28, fetched when missing) or cifar10 (3x32x32, its binary "
                 "version, fetched when missing and checked against its MD5)")
      ->check(CLI::IsMember({"fashion-mnist", "mnist", "cifar10"}))
      ->capture_default_str();
  app.add_option("--augment", o.augment,
                 "per-sample random augmentation of the training images: auto (random crop with padding 4 for "
                 "cifar10 and 2 for the 28x28 sets, and a horizontal flip except for mnist's digits), or no")
      ->check(CLI::IsMember({"auto", "no"}))
      ->capture_default_str();
  app.add_option("--momentum", o.momentum, "SGD momentum (constant: the schedules move the learning rate only)")
      ->check(job::real_number_in(0, 1, true))
      ->capture_default_str();
  app.add_flag("--nesterov,!--no-nesterov", o.nesterov, "Nesterov momentum (default; --no-nesterov: classical)");
  app.add_option("--weight-decay", o.weight_decay, "SGD weight decay (L2 penalty)")
      ->check(job::real_number_in(0, 1, true))
      ->capture_default_str();
  app.add_option(
         "--schedule", o.schedule,
         "learning-rate schedule, stepped every batch: onecycle (OneCycleLR up to --lr and down, with PyTorch's "
         "defaults but a constant momentum) or cosine (CosineAnnealingLR from --lr to 0)")
      ->check(CLI::IsMember({"onecycle", "cosine"}))
      ->capture_default_str();
  app.add_option("--label-smoothing", o.label_smoothing, "label smoothing of the cross-entropy loss")
      ->check(job::real_number_in(0, 1, true))
      ->capture_default_str();
  app.add_option("--evaluate", o.evaluate,
                 "evaluate the model in this file (--save-model's) on the test set, without training")
      ->check(CLI::ExistingFile);
}

}  // namespace resnet
