// ResNet-20 (He et al.'s CIFAR network, models.hpp) trained on Fashion-MNIST, MNIST or
// CIFAR-10 with per-sample augmentation, SGD with Nesterov momentum and weight decay, and
// a one-cycle or cosine schedule stepped every batch. Flags, log lines, exit codes,
// checkpoints, signals and data-parallel training are examples/mnist's. Results go to
// stdout (deterministic for a seed and thread count); timings and notes go to stderr.

#include <cstdio>
#include <memory>
#include <tinynet/data/augment.hpp>
#include <tinynet/data/cifar.hpp>
#include <tinynet/data/dataloader.hpp>
#include <tinynet/data/mnist.hpp>
#include <tinynet/io/io.hpp>
#include <tinynet/optim/lr_scheduler.hpp>
#include <tinynet/optim/sgd.hpp>
#include <tinynet/tinynet.hpp>

#include "../common/agreement.hpp"
#include "../common/checkpoints.hpp"
#include "../common/distributed.hpp"
#include "../common/exit_codes.hpp"
#include "../common/loop.hpp"
#include "../common/monitor.hpp"
#include "../common/outputs.hpp"
#include "../common/program.hpp"
#include "../common/stop.hpp"
#include "../common/training.hpp"
#include "models.hpp"
#include "options.hpp"

namespace resnet {

using namespace tinynet;
using namespace job;

/// The data set's training-set mean and std per channel.
data::Normalize normalization(const Options& o) {
  if (o.dataset == "cifar10") return data::CIFAR10::normalize();
  if (o.dataset == "fashion-mnist") return data::FashionMNIST::normalize();
  return data::MNIST::normalize();
}

/// A split as bytes, made float32 in [0, 1] per batch and then given `transform`.
data::ImageDataset load_split(const Options& o, bool train, data::Transform transform = {}) {
  if (o.dataset == "cifar10")
    return data::CIFAR10(o.data_dir, {.train = train, .download = true, .transform = std::move(transform)});
  const data::MNISTOptions opts{.train = train, .download = true, .transform = std::move(transform)};
  if (o.dataset == "fashion-mnist") return data::FashionMNIST(o.data_dir, opts);
  return data::MNIST(o.data_dir, opts);
}

/// torchvision's training recipe for the data set, per sample: padded and cropped back at a
/// random place, flipped at random (not digits: a mirrored 2 is no 2), normalised last so the
/// padding is black as in torchvision.
data::SampleTransform train_transform(const Options& o, std::int64_t size) {
  const data::Normalize normalize = normalization(o);
  if (o.augment == "no") return normalize;
  const data::RandomCrop crop{size, o.dataset == "cifar10" ? 4 : 2};
  if (o.dataset == "mnist") return data::Compose{crop, normalize};
  return data::Compose{crop, data::RandomHorizontalFlip{}, normalize};
}

using TrainSet = data::Augmented<data::ImageDataset>;

/// The MD5s of the data set's files.
std::string data_checksums(const Options& o) {
  if (o.dataset == "cifar10") return data::cifar10_source().md5;
  return data_md5s(o.dataset == "fashion-mnist" ? data::fashion_mnist_sources() : data::mnist_sources());
}

/// The settings that must match across ranks, in the order they are compared.
std::vector<Setting> shared_settings(const Options& o) {
  std::vector<Setting> settings = {{"--dataset", o.dataset},
                                   {"the data files' MD5s", data_checksums(o)},
                                   {"--augment", o.augment},
                                   {"--lr", exact(o.lr)},
                                   {"--momentum", exact(o.momentum)},
                                   {"--nesterov", o.nesterov ? "yes" : "no"},
                                   {"--weight-decay", exact(o.weight_decay)},
                                   {"--schedule", o.schedule},
                                   {"--label-smoothing", exact(o.label_smoothing)}};
  for (Setting& s : job_settings(o)) settings.push_back(std::move(s));
  return settings;
}

/// Test-set loss (mean cross-entropy, unsmoothed) and accuracy, in examples/mnist's lines.
template <class Model>
TestResult test(Model& model, data::DataLoader<data::ImageDataset>& loader, Device device) {
  return job::test(model, loader, device,
                   [](const Tensor& out, const Tensor& target) { return cross_entropy(out, target, Reduction::sum); });
}

std::unique_ptr<optim::LRScheduler> make_scheduler(const Options& o, optim::Optimizer& optimizer,
                                                   std::int64_t total_steps) {
  if (o.schedule == "cosine") return std::make_unique<optim::CosineAnnealingLR>(optimizer, total_steps);
  return std::make_unique<optim::OneCycleLR>(optimizer, o.lr, total_steps,
                                             optim::OneCycleOptions{.cycle_momentum = false});
}

template <class Model>
int train(const Options& o, const Distributed& dist, Model model, Device device) {
  model.to(device);
  const Clock::time_point load_start = Clock::now();
  data::ImageDataset train_images = load_split(o, true);
  const std::int64_t size = train_images.image_shape()[1];
  auto train_loader =
      make_train_loader(o, dist, TrainSet(std::move(train_images), train_transform(o, size), o.seed), device.is_cuda());
  data::DataLoader test_loader(load_split(o, false, normalization(o)), {.batch_size = o.test_batch_size});
  std::fprintf(stderr, "Loaded %s: %lld training and %lld test images in %.1f s\n", o.dataset.c_str(),
               static_cast<long long>(train_loader.dataset().size()),
               static_cast<long long>(test_loader.dataset().size()), seconds_since(load_start));

  const auto ddp = make_ddp(model, dist);  // gradients averaged over ranks; rank 0's batch-norm buffers
  auto forward = [&](const Tensor& x) { return ddp ? (*ddp)(x) : model(x); };
  optim::SGD optimizer(model.parameters(),
                       {.lr = o.lr, .momentum = o.momentum, .weight_decay = o.weight_decay, .nesterov = o.nesterov});
  const std::int64_t batches =
      o.limit_train_batches > 0 ? std::min(o.limit_train_batches, train_loader.size()) : train_loader.size();
  const auto scheduler = make_scheduler(o, optimizer, batches * o.epochs);

  auto step = [&](const auto& batch) {
    optimizer.zero_grad();
    job::StepResult r;
    {
      autocast mixed(device.type, DType::bfloat16, o.autocast == "bf16");
      r.output = forward(on(device, batch.data));
      r.loss = cross_entropy(r.output, on(device, batch.target), Reduction::mean, o.label_smoothing);
    }
    r.loss.backward();
    optimizer.step();
    scheduler->step();  // per batch: a resumed epoch's schedule goes on from the saved step
    return r;
  };
  const int code = train_epochs(
      o, dist,
      job::Training{model, optimizer, *scheduler, train_loader, batches,
                    "--dataset " + o.dataset + ", --schedule " + o.schedule},
      step, [&] { return test(model, test_loader, device); }, [] {});
  if (code != kExitOk) return code;
  if (o.save_model && dist.is_main()) {
    save(model, o.model_path);
    std::fprintf(stderr, "Saved the model to %s\n", o.model_path.c_str());
  }
  return kExitOk;
}

template <class Model>
int evaluate(const Options& o, Model model, Device device) {
  load(model, o.evaluate);
  model.to(device);
  data::DataLoader test_loader(load_split(o, false, normalization(o)), {.batch_size = o.test_batch_size});
  test(model, test_loader, device);
  return kExitOk;
}

template <class Model>
int run_model(const Options& o, const Distributed& dist, Device device) {
  return o.evaluate.empty() ? train(o, dist, Model(), device) : evaluate(o, Model(), device);
}

int run(const Options& o) {
  const ThreadSource env = set_up_threads(o);
  if (o.evaluate.empty() && will_be_rank0(o)) check_training_outputs(o);
  const Distributed dist = o.evaluate.empty() ? init_distributed(o) : Distributed{};
  const Device device = dist.group ? dist.device : pick_device(o);
  std::fprintf(stderr, "%stinynet resnet: ResNet-20 on %s, %d threads (%s), %s, CPU kernels %s%s\n",
               dist.prefix().c_str(), o.dataset.c_str(), get_num_threads(), o.threads > 0 ? "--threads" : env.source,
               device.str().c_str(), backend::cpu::isa_name(backend::cpu::isa()),
               o.autocast == "bf16" ? ", autocast bfloat16" : "");
  if (o.evaluate.empty()) agree_on_settings(shared_settings(o), dist);  // before any rank loads data
  manual_seed(o.seed);
  if (o.dataset == "cifar10") return run_model<ResNet20<3, 32, 32>>(o, dist, device);
  return run_model<ResNet20<1, 28, 28>>(o, dist, device);
}

}  // namespace resnet

int main(int argc, char** argv) {
  job::program = "resnet";
  job::install_stop_handlers();
  CLI::App app{"Trains ResNet-20 on Fashion-MNIST, MNIST or CIFAR-10 with tinynet"};
  resnet::Options options;
  resnet::add_flags(app, options);
  CLI11_PARSE(app, argc, argv);
  return job::run_guarded([&] { return resnet::run(options); });
}
