// docs/autocast.md: training steps with bfloat16 products, on random data that the
// network must learn to fit (the loss must fall).
#include <cmath>
#include <cstdio>
#include <tinynet/tinynet.hpp>

using namespace tinynet;

using Net = nn::Sequential<nn::Input<1, 12, 12>, nn::Conv2d<16, 3>, nn::ReLU, nn::Conv2d<16, 3>, nn::ReLU,
                           nn::MaxPool2d<2>, nn::Flatten, nn::Linear<10>, nn::LogSoftmax>;

// [autocast]
template <class Model, class Optimizer>
Tensor train_step(Model& model, Optimizer& optimizer, const Tensor& x, const Tensor& target) {
  optimizer.zero_grad();
  Tensor loss;
  {
    autocast mixed(DeviceType::cpu, DType::bfloat16);  // forward and loss, as PyTorch's recipe has it
    loss = nll_loss(model(x), target);
  }
  loss.backward();  // each product multiplies as its forward did
  optimizer.step();
  return loss;
}
// [autocast]

int main() {
  manual_seed(1);
  Net net;
  optim::SGD optimizer(net.parameters(), {.lr = 0.05, .momentum = 0.9});
  const Tensor x = randn({32, 1, 12, 12});
  std::vector<std::int64_t> labels(32);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int64_t>(i % 10);
  const Tensor target = from_vector(labels, {32});
  const float first = train_step(net, optimizer, x, target).item<float>();
  float last = first;
  for (int step = 1; step < 60; ++step) last = train_step(net, optimizer, x, target).item<float>();
  std::printf("loss %.4f -> %.4f with bfloat16 products\n", first, last);
  return std::isfinite(last) && last < 0.5f * first ? 0 : 1;
}
