// docs/gpu.md: training on a CUDA device when there is one. Compiled by g++ this program
// trains on the CPU; compiled by nvcc, on the GPU.
#include <cstdio>
#include <tinynet/data/dataloader.hpp>
#include <tinynet/tinynet.hpp>

using namespace tinynet;

using Net = nn::Sequential<nn::Input<1, 8, 8>, nn::Conv2d<4, 3>, nn::ReLU, nn::Flatten, nn::Linear<3>, nn::LogSoftmax>;

int main() {
  manual_seed(1);
  data::TensorDataset dataset(randn({32, 1, 8, 8}), from_vector<std::int64_t>(std::vector<std::int64_t>(32, 2), {32}));
  data::DataLoader loader(dataset, {.batch_size = 8});

  // [gpu]
  const Device device = tinynet::cuda::is_available() ? Device::cuda() : Device::cpu();
  Net model;
  model.to(device);                               // parameters and buffers
  optim::Adadelta optimizer(model.parameters());  // built after moving the model
  for (auto& batch : loader) {
    optimizer.zero_grad();
    const Tensor loss = nll_loss(model(batch.data.to(device)), batch.target.to(device));
    loss.backward();
    optimizer.step();
  }
  // [gpu]

  std::printf("trained on %s\n", device.str().c_str());
  return 0;
}
