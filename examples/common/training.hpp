#pragma once
// The pieces of a training run every example shares: the clock, the device, the thread
// settings, the loss log line and the test-set evaluation with its Katib lines.

#include <tbb/info.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <tinynet/tinynet.hpp>

#include "flags.hpp"
#include "format.hpp"
#include "monitor.hpp"
#include "program.hpp"

namespace job {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// `t` on `device` (no copy when it is there already).
inline tinynet::Tensor on(tinynet::Device device, const tinynet::Tensor& t) {
  return t.device() == device ? t : t.to(device);
}

/// The device to train on, as PyTorch's examples pick it: CUDA unless --no-cuda or absent.
inline tinynet::Device pick_device(const JobOptions& o) {
#if defined(TINYNET_WITH_CUDA)
  if (!o.no_cuda && tinynet::cuda::is_available()) return tinynet::Device::cuda(0);
  if (!o.no_cuda) std::fprintf(stderr, "No CUDA device found; training on the CPU\n");
#else
  if (!o.no_cuda)
    std::fprintf(stderr, "This build has no CUDA backend (build %s_cuda for that); training on the CPU\n", program);
#endif
  return tinynet::Device::cpu();
}

/// --threads and --keep-denormals applied; returns where the thread count came from when
/// --threads did not give it.
inline tinynet::ThreadSource set_up_threads(const JobOptions& o) {
  if (o.threads > 0) tinynet::set_num_threads(o.threads);
  if (const int cores = tbb::info::default_concurrency(); o.threads > cores)
    std::fprintf(stderr, "note: --threads %d is more than the %d cores this process may use: its threads take turns\n",
                 o.threads, cores);
  tinynet::set_flush_denormal(!o.keep_denormals);
  return tinynet::threads_from_environment();
}

/// PyTorch's example's line: "Epoch: 1 ( 21.3%) - Loss: 0.2706...".
inline void print_loss_line(int epoch, std::int64_t batch, std::int64_t batches, const tinynet::Tensor& loss) {
  std::printf("Epoch: %d (%s) - Loss: %s\n", epoch,
              percentage(static_cast<double>(batch) / static_cast<double>(batches)).c_str(),
              python_repr(loss.item<float>()).c_str());
  std::fflush(stdout);
}

/// The test set's mean loss and accuracy, printed as PyTorch's example prints them and as
/// Katib's metrics collector reads them (loss=, accuracy=). `summed_loss(output, target)`:
/// a batch's loss summed over its samples.
template <class Model, class Loader, class SummedLoss>
TestResult test(Model& model, Loader& loader, tinynet::Device device, SummedLoss summed_loss) {
  model.eval();
  tinynet::NoGradGuard no_grad;
  double loss_sum = 0;
  std::int64_t correct = 0, total = 0;
  for (auto& batch : loader) {
    const tinynet::Tensor& target = batch.target;
    const tinynet::Tensor out = model(on(device, batch.data));
    const tinynet::Tensor loss = summed_loss(out, on(device, target));
    loss_sum += loss.item();
    const tinynet::Tensor pred = on(tinynet::Device::cpu(), tinynet::argmax(out, 1));
    for (std::int64_t i = 0; i < pred.numel(); ++i)
      correct += pred.data<std::int64_t>()[i] == target.data<std::int64_t>()[i];
    total += pred.numel();
  }
  const double accuracy = static_cast<double>(correct) / static_cast<double>(total);
  std::printf("Test accuracy: %lld/%lld (%s)\n", static_cast<long long>(correct), static_cast<long long>(total),
              percentage(accuracy).c_str());
  std::printf("loss=%.4f\n", loss_sum / static_cast<double>(total));
  std::printf("accuracy=%.4f\n", accuracy);
  std::fflush(stdout);
  return {.loss = loss_sum / static_cast<double>(total), .accuracy = accuracy};
}

}  // namespace job
