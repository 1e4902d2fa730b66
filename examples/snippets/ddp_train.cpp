// docs/distributed.md: data-parallel training of a network on MNIST. Start it as the ranks of
// a job (torchrun, or RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT by hand):
//   ddp_train DATA_DIR     (exit 0 when the trained network beats 85% on the test set)
#include <cstdio>
#include <tinynet/data/dataloader.hpp>
#include <tinynet/data/distributed_sampler.hpp>
#include <tinynet/data/mnist.hpp>
#include <tinynet/dist/dist.hpp>
#include <tinynet/optim/sgd.hpp>
#include <tinynet/tinynet.hpp>

using namespace tinynet;

using Net = nn::Sequential<nn::Input<1, 28, 28>, nn::Flatten, nn::Linear<64>, nn::ReLU, nn::Linear<10>, nn::LogSoftmax>;

void train(Net& model, const data::MNIST& train_set, int epochs) {
  // [ddp]
  auto pg = dist::init_process_group("gloo");    // env://: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
  dist::DistributedDataParallel ddp(model, pg);  // checks the ranks agree, copies rank 0's weights
  optim::SGD optimizer(model.parameters(), {.lr = 0.05, .momentum = 0.9});
  auto sampler = std::make_unique<data::DistributedSampler>(train_set.size(), pg->size(), pg->rank(),
                                                            data::DistributedSamplerOptions{.seed = 1});
  data::DataLoader loader(train_set, std::move(sampler), {.batch_size = 64});
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    loader.set_epoch(epoch);  // a new shuffle each epoch, the same on every rank
    for (auto& batch : loader) {
      optimizer.zero_grad();
      nll_loss(ddp(batch.data), batch.target).backward();  // gradients averaged over ranks on return
      optimizer.step();
    }
  }
  pg->barrier();  // rank 0 hosts the store: leave together
  // [ddp]
}

int main(int argc, char** argv) {
  if (argc != 2) return std::fprintf(stderr, "usage: ddp_train DATA_DIR\n"), 2;
  manual_seed(1);
  Net model;
  const data::MNISTOptions opts{.transform = data::MNIST::normalize()};
  train(model, data::MNIST(argv[1], opts), 1);
  NoGradGuard no_grad;
  model.eval();
  std::int64_t correct = 0, total = 0;
  for (auto& batch :
       data::DataLoader(data::MNIST(argv[1], {.train = false, .transform = opts.transform}), {.batch_size = 1000})) {
    const Tensor pred = argmax(model(batch.data), 1);
    for (std::int64_t i = 0; i < pred.numel(); ++i)
      correct += pred.data<std::int64_t>()[i] == batch.target.data<std::int64_t>()[i];
    total += pred.numel();
  }
  const double accuracy = static_cast<double>(correct) / static_cast<double>(total);
  std::printf("test accuracy %.4f\n", accuracy);
  return accuracy > 0.85 ? 0 : 1;
}
