// Times the forward and the backward of single ops at the MNIST examples' shapes and of
// ResNet-20's convolutions, batch norms and residual sums, for bench/run.py
// (bench/pytorch_op_bench.py does the same work in PyTorch). Prints one JSON object per
// op: median milliseconds over the timed repetitions.
//   op_bench --threads N [--reps R] [--warmup W]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <tinynet/tinynet.hpp>
#include <vector>

namespace {

using namespace tinynet;
using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

/// `forward(inputs)` builds the op's output from fresh leaf inputs; the backward is timed
/// separately with a fixed upstream gradient of the output's shape (or none for a scalar).
std::string only;   // --only: time the ops whose name contains this
bool bf16 = false;  // --autocast bf16: the forward under autocast

/// With `bf16_input` under --autocast bf16 the op's first input is bfloat16, as a
/// convolution's output is there (batch norm's input): cast from the float32 leaf before
/// the forward is timed (the backward's time includes the cast's).
void time_op(const std::string& name, const std::vector<Shape>& input_shapes,
             const std::function<Tensor(const std::vector<Tensor>&)>& forward, int warmup, int reps,
             bool bf16_input = false) {
  if (name.find(only) == std::string::npos) return;
  std::vector<Tensor> inputs;
  for (const Shape& s : input_shapes) inputs.push_back(randn(s).requires_grad_());
  std::vector<double> fwd, bwd;
  Tensor gy;
  for (int r = 0; r < warmup + reps; ++r) {
    for (Tensor& t : inputs) t.set_grad(Tensor());  // as optimizer.zero_grad() does
    std::vector<Tensor> args = inputs;
    if (bf16_input && bf16) args[0] = cast(args[0], DType::bfloat16);
    Clock::time_point t0 = Clock::now();
    Tensor y;
    {
      autocast scope(DeviceType::cpu, DType::bfloat16, bf16);
      y = forward(args);
    }
    const double f = ms_since(t0);
    if (!gy.defined() && y.dim() > 0) gy = randn(y.shape()).to(y.dtype());  // (bfloat16 from conv2d under autocast)
    t0 = Clock::now();
    y.backward(y.dim() > 0 ? gy : Tensor());
    const double b = ms_since(t0);
    if (r >= warmup) {
      fwd.push_back(f);
      bwd.push_back(b);
    }
  }
  std::printf(
      "{\"impl\": \"tinynet\", \"op\": \"%s\", \"autocast\": %s, \"threads\": %d, \"forward_ms\": %.4f, "
      "\"backward_ms\": %.4f}\n",
      name.c_str(), bf16 ? "\"bf16\"" : "null", get_num_threads(), median(fwd), median(bwd));
}

Tensor labels(std::int64_t n) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = (i * 7) % 10;
  return from_vector(v, {n});
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tinynet per-op forward/backward times at the MNIST examples' and ResNet-20's shapes, for bench/run.py"};
  int threads = 2, reps = 30, warmup = 5;
  app.add_option("--threads", threads)->check(CLI::Range(1, 1024));
  app.add_option("--reps", reps)->check(CLI::Range(1, 100000));
  app.add_option("--warmup", warmup)->check(CLI::Range(0, 100000));
  app.add_option("--only", only, "time only the ops whose name contains this (e.g. net.conv2)");
  std::string autocast_dtype = "off";
  app.add_option("--autocast", autocast_dtype, "forward passes under autocast (bf16)")
      ->check(CLI::IsMember({"off", "bf16"}));
  CLI11_PARSE(app, argc, argv);
  bf16 = autocast_dtype == "bf16";
  set_num_threads(threads);
  set_flush_denormal(true);
  manual_seed(1);

  const auto conv = [](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], in[2]); };
  const auto lin = [](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); };
  const auto pool = [](const std::vector<Tensor>& in) { return max_pool2d(in[0], 2); };
  const auto relu_op = [](const std::vector<Tensor>& in) { return relu(in[0]); };
  const auto drop = [](const std::vector<Tensor>& in) { return dropout(in[0], 0.25); };
  const Tensor targets_64 = labels(64);
  const auto loss_64 = [&](const std::vector<Tensor>& in) { return nll_loss(log_softmax(in[0], 1), targets_64); };

  // The example's network (NET), batch 64.
  time_op("net.conv1", {{64, 1, 28, 28}, {32, 1, 3, 3}, {32}}, conv, warmup, reps);
  time_op("net.conv2", {{64, 32, 26, 26}, {64, 32, 3, 3}, {64}}, conv, warmup, reps);
  time_op("net.relu", {{64, 64, 24, 24}}, relu_op, warmup, reps);
  time_op("net.max_pool2d", {{64, 64, 24, 24}}, pool, warmup, reps);
  time_op("net.dropout", {{64, 64, 12, 12}}, drop, warmup, reps);
  time_op("net.fc1", {{64, 9216}, {128, 9216}, {128}}, lin, warmup, reps);
  time_op("net.fc2", {{64, 128}, {10, 128}, {10}}, lin, warmup, reps);
  time_op("net.log_softmax_nll", {{64, 10}}, loss_64, warmup, reps);
  // LeNet, batch 100.
  const Tensor targets_100 = labels(100);
  const auto loss_100 = [&](const std::vector<Tensor>& in) { return nll_loss(log_softmax(in[0], 1), targets_100); };
  time_op("lenet.conv1", {{100, 1, 28, 28}, {20, 1, 5, 5}, {20}}, conv, warmup, reps);
  time_op("lenet.max_pool2d_1", {{100, 20, 24, 24}}, pool, warmup, reps);
  time_op("lenet.conv2", {{100, 20, 12, 12}, {50, 20, 5, 5}, {50}}, conv, warmup, reps);
  time_op("lenet.max_pool2d_2", {{100, 50, 8, 8}}, pool, warmup, reps);
  time_op("lenet.fc1", {{100, 800}, {500, 800}, {500}}, lin, warmup, reps);
  time_op("lenet.fc2", {{100, 500}, {10, 500}, {10}}, lin, warmup, reps);
  time_op("lenet.log_softmax_nll", {{100, 10}}, loss_100, warmup, reps);
  // ResNet-20's convolutions (no bias), batch 128: each stage's 3x3, and the downsampling
  // block's 3x3 and 1x1 shortcut at stride 2.
  const auto conv_sp = [](int stride, int padding) {
    return [=](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], Tensor(), stride, padding); };
  };
  time_op("resnet20.conv_28", {{128, 16, 28, 28}, {16, 16, 3, 3}}, conv_sp(1, 1), warmup, reps);
  time_op("resnet20.conv_14", {{128, 32, 14, 14}, {32, 32, 3, 3}}, conv_sp(1, 1), warmup, reps);
  time_op("resnet20.conv_7", {{128, 64, 7, 7}, {64, 64, 3, 3}}, conv_sp(1, 1), warmup, reps);
  time_op("resnet20.down_conv", {{128, 16, 28, 28}, {32, 16, 3, 3}}, conv_sp(2, 1), warmup, reps);
  time_op("resnet20.shortcut", {{128, 16, 28, 28}, {32, 16, 1, 1}}, conv_sp(2, 0), warmup, reps);
  // The first stage's batch norms (with the ReLU after the block's first convolution,
  // without it after the second) and its residual sum with the ReLU after it.
  Tensor running_mean = zeros({16}), running_var = ones({16});
  const auto bn = [&](bool relu) {
    return [&, relu](const std::vector<Tensor>& in) {
      return relu ? batch_norm_relu(in[0], running_mean, running_var, in[1], in[2])
                  : batch_norm(in[0], running_mean, running_var, in[1], in[2]);
    };
  };
  time_op("resnet20.bn_relu_28", {{128, 16, 28, 28}, {16}, {16}}, bn(true), warmup, reps, true);
  time_op("resnet20.bn_28", {{128, 16, 28, 28}, {16}, {16}}, bn(false), warmup, reps, true);
  time_op(
      "resnet20.add_relu_28", {{128, 16, 28, 28}, {128, 16, 28, 28}},
      [](const std::vector<Tensor>& in) { return add_relu(in[0], in[1]); }, warmup, reps);
  return 0;
}
