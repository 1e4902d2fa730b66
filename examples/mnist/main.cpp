// PyTorch's MNIST example, rebuilt on tinynet: the same network, optimizer, flags,
// defaults and log lines. Results go to stdout (deterministic for a seed and thread
// count); timings and notes go to stderr.

#include <cstdio>
#include <memory>
#include <tinynet/data/dataloader.hpp>
#include <tinynet/data/mnist.hpp>
#include <tinynet/io/io.hpp>
#include <tinynet/onnx/export.hpp>
#include <tinynet/optim/adadelta.hpp>
#include <tinynet/optim/adam.hpp>
#include <tinynet/optim/lr_scheduler.hpp>
#include <tinynet/optim/sgd.hpp>
#include <tinynet/tinynet.hpp>

#include "../common/agreement.hpp"
#include "../common/checkpoints.hpp"
#include "../common/distributed.hpp"
#include "../common/exit_codes.hpp"
#include "../common/loop.hpp"
#include "../common/monitor.hpp"
#include "../common/program.hpp"
#include "../common/stop.hpp"
#include "../common/training.hpp"
#include "models.hpp"
#include "options.hpp"
#include "outputs.hpp"
#include "pictures.hpp"

namespace mnist {

using namespace tinynet;
using namespace job;

data::MNIST load_split(const Options& o, bool train) {
  const bool fashion = o.dataset == "fashion-mnist";
  const bool normalize = o.normalize == "yes" || (o.normalize == "auto" && !fashion);
  data::MNISTOptions opts{.train = train, .download = true};
  if (normalize) opts.transform = fashion ? data::FashionMNIST::normalize() : data::MNIST::normalize();
  if (fashion) return data::FashionMNIST(o.data_dir, opts);
  return data::MNIST(o.data_dir, opts);
}

std::unique_ptr<optim::Optimizer> make_optimizer(const Options& o, std::vector<Tensor> params) {
  if (o.optimizer == "sgd")
    return std::make_unique<optim::SGD>(std::move(params), optim::SGDOptions{.lr = o.lr, .momentum = o.momentum});
  if (o.optimizer == "adam") return std::make_unique<optim::Adam>(std::move(params), optim::AdamOptions{.lr = o.lr});
  return std::make_unique<optim::Adadelta>(std::move(params), optim::AdadeltaOptions{.lr = o.lr});
}

/// The settings that must match across ranks, in the order they are compared.
std::vector<Setting> shared_settings(const Options& o) {
  std::vector<Setting> settings = {
      {"--model", o.model},
      {"--optimizer", o.optimizer},
      {"--lr", exact(o.lr)},
      {"--momentum", exact(o.momentum)},
      {"--gamma", exact(o.gamma)},
      {"--dataset", o.dataset},
      {"the data files' MD5s",
       data_md5s(o.dataset == "fashion-mnist" ? data::fashion_mnist_sources() : data::mnist_sources())},
      {"--normalize", o.normalize}};
  for (Setting& s : job_settings(o)) settings.push_back(std::move(s));
  return settings;
}

/// Test-set loss (mean NLL) and accuracy, printed as the Python trainer prints them.
template <class Model>
TestResult test(Model& model, data::DataLoader<data::MNIST>& loader, Device device) {
  return job::test(model, loader, device,
                   [](const Tensor& out, const Tensor& target) { return nll_loss(out, target, Reduction::sum); });
}

/// --export-onnx: the model in eval mode, its initializers under the PyTorch example's names.
template <class Model>
void export_onnx(const Options& o, Model& model) {
  if (o.export_onnx.empty()) return;
  onnx::export_model(model, o.export_onnx, {.names = names_in_order(model.state_dict(), kPyTorchNames)});
  std::fprintf(stderr, "Exported the model as ONNX to %s\n", o.export_onnx.c_str());
}

/// --predictions-png and --confusion-png, from the model's predictions on the test set.
template <class Model>
void draw_pictures(const Options& o, Model& model, data::DataLoader<data::MNIST>& loader, Device device) {
  if (o.predictions_png.empty() && o.confusion_png.empty()) return;
  model.eval();
  NoGradGuard no_grad;
  std::vector<std::int64_t> predicted, truth;
  for (auto& batch : loader) {
    const Tensor pred = on(Device::cpu(), argmax(model(on(device, batch.data)), 1));
    for (std::int64_t i = 0; i < pred.numel(); ++i) {
      predicted.push_back(pred.data<std::int64_t>()[i]);
      truth.push_back(batch.target.data<std::int64_t>()[i]);
    }
  }
  if (!o.predictions_png.empty()) {
    write_png(predictions_grid(loader.dataset().data(), predicted, truth, 100), o.predictions_png);
    std::fprintf(stderr, "Drew the first 100 test images and their predictions to %s\n", o.predictions_png.c_str());
  }
  if (!o.confusion_png.empty()) {
    write_png(confusion_matrix(predicted, truth, 10), o.confusion_png);
    std::fprintf(stderr, "Drew the confusion matrix to %s\n", o.confusion_png.c_str());
  }
}

template <class Model>
int train(const Options& o, const Distributed& dist, Model model, Device device) {
  model.to(device);
  const Clock::time_point load_start = Clock::now();
  auto train_loader = make_train_loader(o, dist, load_split(o, true), device.is_cuda());
  data::DataLoader test_loader(load_split(o, false), {.batch_size = o.test_batch_size});
  std::fprintf(stderr, "Loaded %s: %lld training and %lld test images in %.1f s\n", o.dataset.c_str(),
               static_cast<long long>(train_loader.dataset().size()),
               static_cast<long long>(test_loader.dataset().size()), seconds_since(load_start));

  const auto ddp = make_ddp(model, dist);  // gradients averaged over ranks during backward
  auto optimizer = make_optimizer(o, model.parameters());
  optim::StepLR scheduler(*optimizer, 1, o.gamma);

  const std::int64_t batches =
      o.limit_train_batches > 0 ? std::min(o.limit_train_batches, train_loader.size()) : train_loader.size();
  auto step = [&](const auto& batch) {
    optimizer->zero_grad();
    job::StepResult r;
    {
      // The forward pass and the loss, as PyTorch's autocast recipe has it; backward
      // multiplies as the forward did.
      autocast mixed(device.type, DType::bfloat16, o.autocast == "bf16");
      r.output = model(on(device, batch.data));
      r.loss = nll_loss(r.output, on(device, batch.target));
    }
    r.loss.backward();
    optimizer->step();
    return r;
  };
  const int code = train_epochs(
      o, dist,
      job::Training{model, *optimizer, scheduler, train_loader, batches,
                    "--model " + o.model + ", --optimizer " + o.optimizer},
      step, [&] { return test(model, test_loader, device); }, [&] { scheduler.step(); });
  if (code != kExitOk) return code;
  if (o.save_model && dist.is_main()) {
    save(model, o.model_path);
    std::fprintf(stderr, "Saved the model to %s\n", o.model_path.c_str());
  }
  if (!o.save_pytorch.empty() && dist.is_main()) {
    save_pytorch(model, o.save_pytorch, names_in_order(model.state_dict(), kPyTorchNames));
    std::fprintf(stderr, "Saved the model as a PyTorch state_dict to %s\n", o.save_pytorch.c_str());
  }
  if (dist.is_main()) {
    export_onnx(o, model);
    draw_pictures(o, model, test_loader, device);
  }
  return kExitOk;
}

template <class Model>
int evaluate(const Options& o, Model model, Device device) {
  // A PyTorch state_dict's entries are paired with the model's in order, shapes checked.
  if (is_pytorch_file(o.evaluate)) {
    load_pytorch(model, o.evaluate);
  } else {
    load(model, o.evaluate);
  }
  export_onnx(o, model);
  model.to(device);
  data::DataLoader test_loader(load_split(o, false), {.batch_size = o.test_batch_size});
  test(model, test_loader, device);
  draw_pictures(o, model, test_loader, device);
  return kExitOk;
}

int run(const Options& o) {
  const ThreadSource env = set_up_threads(o);
  check_outputs(o, !o.evaluate.empty() || will_be_rank0(o));
  const Distributed dist = o.evaluate.empty() ? init_distributed(o) : Distributed{};
  // A data-parallel rank trains where its backend works: the CPU with Gloo, its GPU with NCCL.
  const Device device = dist.group ? dist.device : pick_device(o);
  std::fprintf(stderr, "%stinynet mnist: model %s, optimizer %s, %d threads (%s), %s, CPU kernels %s%s\n",
               dist.prefix().c_str(), o.model.c_str(), o.optimizer.c_str(), get_num_threads(),
               o.threads > 0 ? "--threads" : env.source, device.str().c_str(),
               backend::cpu::isa_name(backend::cpu::isa()), o.autocast == "bf16" ? ", autocast bfloat16" : "");
  if (o.evaluate.empty()) agree_on_settings(shared_settings(o), dist);  // before any rank loads data
  manual_seed(o.seed);
  if (o.model == "lenet")
    return o.evaluate.empty() ? train(o, dist, make_lenet(), device) : evaluate(o, make_lenet(), device);
  return o.evaluate.empty() ? train(o, dist, make_net(), device) : evaluate(o, make_net(), device);
}

}  // namespace mnist

int main(int argc, char** argv) {
  job::program = "mnist";
  job::install_stop_handlers();
  CLI::App app{"Trains PyTorch's MNIST example network (or LeNet) with tinynet"};
  mnist::Options options;
  mnist::add_flags(app, options);
  CLI11_PARSE(app, argc, argv);
  return job::run_guarded([&] { return mnist::run(options); });
}
