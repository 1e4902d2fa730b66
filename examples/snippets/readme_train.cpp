// README.md: define a network and train it for an epoch on MNIST (fetched into ./data).
#include <cstdio>
#include <tinynet/data/dataloader.hpp>
#include <tinynet/data/mnist.hpp>
#include <tinynet/io/io.hpp>
#include <tinynet/tinynet.hpp>

// [readme]
using namespace tinynet;

using Net = nn::Sequential<nn::Input<1, 28, 28>, nn::Conv2d<32, 3>, nn::ReLU, nn::MaxPool2d<2>, nn::Flatten,
                           nn::Linear<128>, nn::ReLU, nn::Linear<10>, nn::LogSoftmax>;

Net train_one_epoch() {
  manual_seed(1);
  Net net;  // shapes checked at compile time; 693,962 parameters
  optim::Adadelta optimizer(net.parameters(), {.lr = 1.0});
  data::MNIST train("data", {.download = true, .transform = data::MNIST::normalize()});

  for (auto& batch : data::DataLoader(train, {.batch_size = 64, .shuffle = true, .seed = 1})) {
    optimizer.zero_grad();
    Tensor loss = nll_loss(net(batch.data), batch.target);  // recorded on the tape
    loss.backward();
    optimizer.step();
  }
  save(net, "net.tnet");
  return net;
}
// [readme]

static_assert(Net::parameter_count == 693'962);

int main() {
  Net net = train_one_epoch();
  net.eval();
  NoGradGuard no_grad;
  const data::MNIST test("data", {.train = false, .transform = data::MNIST::normalize()});
  const Tensor pred = argmax(net(test.data()), 1);
  const std::int64_t correct = sum(eq(pred, test.targets())).item<std::int64_t>();
  std::printf("test accuracy after one epoch: %.4f\n", static_cast<double>(correct) / 10000.0);
  return correct > 9700 ? 0 : 1;
}
