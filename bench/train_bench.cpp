// Times training of the MNIST example's networks on real MNIST held in memory, and prints
// one JSON object per run for bench/run.py. Also measures Eigen's SGEMM (the ceiling).
//   train_bench --model net|lenet --threads N --batches B --warmup W --data-dir DIR
//   train_bench --sgemm 2048 --threads N
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <tinynet/data/mnist.hpp>
#include <tinynet/tinynet.hpp>

#include <chrono>
#include <cstdio>

#include "../examples/mnist/models.hpp"

namespace {

using namespace tinynet;
using Clock = std::chrono::steady_clock;

double max_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

/// Multiply-adds of one image's forward pass: FLOP per trained image = 2 * 3 * this.
constexpr double kNetMacs = 32.0 * 1 * 9 * 26 * 26 + 64.0 * 32 * 9 * 24 * 24 + 9216.0 * 128 + 128.0 * 10;
constexpr double kLeNetMacs = 20.0 * 25 * 24 * 24 + 50.0 * 20 * 25 * 8 * 8 + 800.0 * 500 + 500.0 * 10;

template <class Model, class MakeOptimizer>
int train(Model model, MakeOptimizer make_optimizer, const data::MNIST& train_set, std::int64_t batch, int warmup,
          int batches, const char* name, double macs) {
  auto opt = make_optimizer(model.parameters());
  const std::int64_t n = train_set.size();
  std::vector<std::int64_t> idx(static_cast<std::size_t>(batch));
  auto step = [&](int s) {
    for (std::int64_t i = 0; i < batch; ++i) idx[static_cast<std::size_t>(i)] = (s * batch + i) % n;
    const data::Batch b = train_set.get_batch(idx);
    opt->zero_grad();
    nll_loss(model(b.data), b.target).backward();
    opt->step();
  };
  for (int s = 0; s < warmup; ++s) step(s);
  const std::uint64_t allocs_before = cpu_allocator().stats().system_allocs;
  const Clock::time_point t0 = Clock::now();
  for (int s = warmup; s < warmup + batches; ++s) step(s);
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  const double images = static_cast<double>(batches * batch);
  std::printf(
      "{\"impl\": \"tinynet\", \"model\": \"%s\", \"threads\": %d, \"batch\": %lld, \"batches\": %d, "
      "\"seconds\": %.4f, \"images_per_s\": %.1f, \"gflops\": %.2f, \"epoch_s\": %.2f, \"max_rss_mb\": %.1f, "
      "\"system_allocs_in_timed_steps\": %llu}\n",
      name, get_num_threads(), static_cast<long long>(batch), batches, secs, images / secs,
      images * 6 * macs / secs / 1e9, 60000.0 / (images / secs), max_rss_mb(),
      static_cast<unsigned long long>(cpu_allocator().stats().system_allocs - allocs_before));
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tinynet training throughput on MNIST, for bench/run.py"};
  std::string model = "net", data_dir = "data";
  int threads = 2, batches = 100, warmup = 10, sgemm_size = 0;
  app.add_option("--model", model)->check(CLI::IsMember({"net", "lenet"}));
  app.add_option("--threads", threads)->check(CLI::Range(1, 1024));
  app.add_option("--batches", batches)->check(CLI::Range(1, 100000));
  app.add_option("--warmup", warmup)->check(CLI::Range(0, 100000));
  app.add_option("--data-dir", data_dir);
  app.add_option("--sgemm", sgemm_size, "time an N x N SGEMM instead")->check(CLI::Range(1, 16384));
  CLI11_PARSE(app, argc, argv);
  set_num_threads(threads);
  set_flush_denormal(true);
  manual_seed(1);
  if (sgemm_size > 0) return sgemm(sgemm_size);
  const data::MNIST train_set(data_dir, {.download = true, .transform = data::MNIST::normalize()});
  // The example's settings: NET with Adadelta (lr 1.0), batch 64; LeNet with SGD (lr 0.1,
  // momentum 0.9), batch 100.
  if (model == "lenet") {
    auto sgd = [](std::vector<Tensor> p) {
      return std::make_unique<optim::SGD>(std::move(p), optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
    };
    return train(mnist::make_lenet(), sgd, train_set, 100, warmup, batches, "lenet", kLeNetMacs);
  }
  auto adadelta = [](std::vector<Tensor> p) { return std::make_unique<optim::Adadelta>(std::move(p)); };
  return train(mnist::make_net(), adadelta, train_set, 64, warmup, batches, "net", kNetMacs);
}
