// docs/metrics.md: the metrics writers and the progress bar in a training loop of your
// own (here: fitting y = 3x - 1 with one Linear layer).
#include <cstdio>
#include <filesystem>
#include <tinynet/metrics.hpp>
#include <tinynet/tinynet.hpp>

using namespace tinynet;

int main() {
  manual_seed(1);
  nn::Linear<1> model{1};
  optim::SGD optimizer(model.parameters(), {.lr = 0.1});
  const Tensor x = uniform({256, 1}, -1.0, 1.0);
  const Tensor y = add(mul(x, 3.0), -1.0);
  double loss_value = 0;

  // [metrics]
  metrics::JsonlWriter jsonl("fit.jsonl");             // one JSON object per call
  metrics::TensorBoardWriter tensorboard("runs/fit");  // a new events.out.tfevents.* file
  metrics::ProgressBar bar;                            // draws only if stdout is a terminal

  const std::int64_t steps = 200;
  for (std::int64_t step = 1; step <= steps; ++step) {
    optimizer.zero_grad();
    const Tensor loss = mean(pow(sub(model(x), y), 2.0));
    loss.backward();
    optimizer.step();
    loss_value = loss.item();
    if (bar.due()) bar.draw({.label = "fit", .done = step, .total = steps, .loss = loss_value});
    if (step % 20 == 0) {
      bar.clear();  // before anything else is printed
      jsonl.write({{"kind", "step"}, {"step", step}, {"loss", loss_value}, {"wall_time", metrics::wall_time()}});
      tensorboard.add_scalar("train/loss", loss_value, step);
    }
  }
  // [metrics]
  std::printf("final loss %.3g; wrote %s and %s\n", loss_value, jsonl.path().c_str(), tensorboard.path().c_str());
  return loss_value < 1e-4 && std::filesystem::file_size(jsonl.path()) > 0 ? 0 : 1;
}
