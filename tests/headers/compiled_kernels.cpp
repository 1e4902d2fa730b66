// Compiled, never run (compiled_kernels_check.cmake): a unit that trains a network with
// every kernel family (conv2d, max_pool2d, dropout, linear, SGD and Adadelta) and a dtype
// conversion, compiled
// with TINYNET_CPU_KERNELS_COMPILED, must define no kernel of any vector level itself.
// A kernel entry point missing from TINYNET_CPU_KERNELS shows up here as a definition.
#include <tinynet/tinynet.hpp>

using namespace tinynet;

using Net = nn::Sequential<nn::Input<1, 12, 12>, nn::Conv2d<8, 3>, nn::ReLU, nn::MaxPool2d<2>, nn::Dropout, nn::Flatten,
                           nn::Linear<10>, nn::LogSoftmax>;

void train_step(Net& net, const Tensor& x, const Tensor& target) {
  optim::SGD sgd(net.parameters(), {.lr = 0.1, .momentum = 0.9});
  optim::Adadelta adadelta(net.parameters(), {.lr = 1.0});
  Tensor loss = nll_loss(net(x), target);
  loss.backward();
  sgd.step();
  adadelta.step();
}

Tensor in_float64(const Tensor& x) { return x.to(DType::float64); }
