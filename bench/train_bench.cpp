// Times training of the MNIST example's networks on real MNIST held in memory, and prints
// one JSON object per run for bench/run.py and bench/gpu_bench.py. Also measures Eigen's
// SGEMM (the ceiling). Built twice: train_bench (g++, CPU) and train_bench_cuda (nvcc),
// which trains on the GPU with --device cuda.
//   train_bench --model net|lenet|resnet20 --threads N --batches B --warmup W --data-dir DIR [--autocast bf16]
//   train_bench_cuda --device cuda --model net --batches 938 --warmup 20 --data-dir DIR
//   train_bench --sgemm 2048 --threads N
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <tinynet/data/mnist.hpp>
#include <tinynet/tinynet.hpp>

#include "../examples/mnist/models.hpp"
#include "../examples/resnet/models.hpp"

namespace {

using namespace tinynet;
using Clock = std::chrono::steady_clock;

/// The device --device names: an error saying what is missing when it cannot be used.
Device pick_device(const std::string& name) {
  if (name == "cpu") return Device::cpu();
#if defined(TINYNET_WITH_CUDA)
  TINYNET_CHECK(Error, tinynet::cuda::is_available(),
                "--device cuda: no CUDA device is present (no GPU, or no driver: see nvidia-smi)");
  return Device::cuda(0);
#else
  throw Error(
      "--device cuda: this train_bench was compiled by g++ without the CUDA backend; run train_bench_cuda "
      "(built by nvcc when TINYNET_WITH_CUDA is ON)");
#endif
}

/// Waits for the work queued on `device`, so that the clock is read after it has run.
void synchronize(Device device) {
#if defined(TINYNET_WITH_CUDA)
  if (device.is_cuda()) tinynet::cuda::synchronize();
#else
  (void)device;
#endif
}

/// `t` on `device`; to a GPU through pinned memory, as the DataLoader's pin_memory does, so
/// the upload does not block the host.
Tensor upload(const Tensor& t, Device device) { return device.is_cuda() ? t.pin_memory().to(device) : t; }

double max_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

/// Multiply-adds of one image's forward pass: FLOP per trained image = 2 * 3 * this.
constexpr double kNetMacs = 32.0 * 1 * 9 * 26 * 26 + 64.0 * 32 * 9 * 24 * 24 + 9216.0 * 128 + 128.0 * 10;
constexpr double kLeNetMacs = 20.0 * 25 * 24 * 24 + 50.0 * 20 * 25 * 8 * 8 + 800.0 * 500 + 500.0 * 10;

/// NET and LeNet end in log_softmax (nll_loss); ResNet-20 gives logits (cross_entropy).
enum class Loss { nll, cross_entropy };

template <class Model, class MakeOptimizer>
int train(Model model, MakeOptimizer make_optimizer, const data::MNIST& train_set, Device device, std::int64_t batch,
          int warmup, int batches, const char* name, double macs, bool bf16, Loss loss_kind = Loss::nll) {
  model.to(device);
  auto opt = make_optimizer(model.parameters());  // built after moving the model
  const std::int64_t n = train_set.size();
  std::vector<std::int64_t> idx(static_cast<std::size_t>(batch));
  auto step = [&](int s) {
    for (std::int64_t i = 0; i < batch; ++i) idx[static_cast<std::size_t>(i)] = (s * batch + i) % n;
    const data::Batch b = train_set.get_batch(idx);
    opt->zero_grad();
    Tensor loss;
    {
      autocast scope(device.type, DType::bfloat16, bf16);  // forward and loss, as the example does
      const Tensor out = model(upload(b.data, device)), target = upload(b.target, device);
      loss = loss_kind == Loss::nll ? nll_loss(out, target) : cross_entropy(out, target);
    }
    loss.backward();
    opt->step();
  };
  for (int s = 0; s < warmup; ++s) step(s);
  synchronize(device);
  Allocator& allocator = allocator_for(device);
  const std::uint64_t allocs_before = allocator.stats().system_allocs;
  const Clock::time_point t0 = Clock::now();
  for (int s = warmup; s < warmup + batches; ++s) step(s);
  synchronize(device);
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  const double images = static_cast<double>(batches * batch);
  std::printf(
      "{\"impl\": \"tinynet\", \"device\": \"%s\", \"cpu_isa\": \"%s\", \"autocast\": %s, \"model\": \"%s\", "
      "\"threads\": %d, "
      "\"batch\": %lld, "
      "\"batches\": %d, \"seconds\": %.4f, \"images_per_s\": %.1f, \"gflops\": %.2f, \"epoch_s\": %.2f, "
      "\"max_rss_mb\": %.1f, \"system_allocs_in_timed_steps\": %llu}\n",
      device.str().c_str(), backend::cpu::isa_name(backend::cpu::isa()), bf16 ? "\"bf16\"" : "null", name,
      get_num_threads(), static_cast<long long>(batch), batches, secs, images / secs, images * 6 * macs / secs / 1e9,
      60000.0 / (images / secs), max_rss_mb(),
      static_cast<unsigned long long>(allocator.stats().system_allocs - allocs_before));
  return 0;
}

int sgemm(int size) {
  const Tensor a = randn({size, size}), b = randn({size, size});
  Tensor c = empty({size, size});
  auto run = [&] {
    backend::cpu::gemm<float>(false, false, size, size, size, 1.f, a.data<float>(), size, b.data<float>(), size, 0.f,
                              c.data<float>(), size);
  };
  run();
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    const Clock::time_point t0 = Clock::now();
    run();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::printf("{\"impl\": \"eigen\", \"sgemm\": %d, \"threads\": %d, \"gflops\": %.1f}\n", size, get_num_threads(),
              2.0 * size * size * size / best / 1e9);
  return 0;
}

int run(const std::string& device_name, const std::string& model, const std::string& data_dir, int threads, int batches,
        int warmup, int sgemm_size, bool bf16) {
  set_num_threads(threads);
  set_flush_denormal(true);
  manual_seed(1);
  const Device device = pick_device(device_name);
  if (sgemm_size > 0) {
    TINYNET_CHECK(ValueError, device.is_cpu(), "--sgemm times Eigen's CPU GEMM; it takes no --device cuda");
    return sgemm(sgemm_size);
  }
  const data::MNIST train_set(data_dir, {.download = true, .transform = data::MNIST::normalize()});
  // The example's settings: NET with Adadelta (lr 1.0), batch 64; LeNet with SGD (lr 0.1,
  // momentum 0.9), batch 100.
  if (model == "resnet20") {  // examples/resnet's recipe: SGD with Nesterov momentum and weight decay, batch 128
    auto sgd = [](std::vector<Tensor> p) {
      return std::make_unique<optim::SGD>(
          std::move(p), optim::SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 5e-4, .nesterov = true});
    };
    return train(resnet::ResNet20<1, 28, 28>(), sgd, train_set, device, 128, warmup, batches, "resnet20",
                 resnet::forward_macs(1, 28, 28), bf16, Loss::cross_entropy);
  }
  if (model == "lenet") {
    auto sgd = [](std::vector<Tensor> p) {
      return std::make_unique<optim::SGD>(std::move(p), optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
    };
    return train(mnist::make_lenet(), sgd, train_set, device, 100, warmup, batches, "lenet", kLeNetMacs, bf16);
  }
  auto adadelta = [](std::vector<Tensor> p) { return std::make_unique<optim::Adadelta>(std::move(p)); };
  return train(mnist::make_net(), adadelta, train_set, device, 64, warmup, batches, "net", kNetMacs, bf16);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tinynet training throughput on MNIST, for bench/run.py and bench/gpu_bench.py"};
  std::string device = "cpu", model = "net", data_dir = "data", autocast_dtype = "off";
  int threads = 2, batches = 100, warmup = 10, sgemm_size = 0;
  app.add_option("--device", device, "train on the CPU or on CUDA device 0 (train_bench_cuda)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--model", model)->check(CLI::IsMember({"net", "lenet", "resnet20"}));
  app.add_option("--threads", threads)->check(CLI::Range(1, 1024));
  app.add_option("--batches", batches)->check(CLI::Range(1, 100000));
  app.add_option("--warmup", warmup)->check(CLI::Range(0, 100000));
  app.add_option("--data-dir", data_dir);
  app.add_option("--sgemm", sgemm_size, "time an N x N SGEMM instead")->check(CLI::Range(1, 16384));
  app.add_option("--autocast", autocast_dtype, "forward and loss under autocast (bf16), as the example's --autocast")
      ->check(CLI::IsMember({"off", "bf16"}));
  CLI11_PARSE(app, argc, argv);
  try {
    return run(device, model, data_dir, threads, batches, warmup, sgemm_size, autocast_dtype == "bf16");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
