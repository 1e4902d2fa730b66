// Training on the device: optimizer updates, a whole Sequential network trained for a few
// steps, model and checkpoint files, and the caching allocator's steady state.

#include <filesystem>
#include <tinynet/io/io.hpp>
#include <tinynet/optim/adadelta.hpp>
#include <tinynet/optim/adam.hpp>
#include <tinynet/optim/sgd.hpp>

#include "../temp_dir.hpp"
#include "device_testing.hpp"

using namespace tinynet;
using namespace tinynet::testing;

namespace {

/// Runs three steps of an optimizer made by `make` on CPU and device copies of the same
/// parameters and gradients; the parameters must agree afterwards.
template <typename Make>
void check_optimizer(Make make) {
  Tensor p = input32({37, 5}, 70), g = input32({37, 5}, 71, false);
  Tensor pd = on_device(p);
  auto opt = make(std::vector<Tensor>{p});
  auto opt_d = make(std::vector<Tensor>{pd});
  for (int step = 0; step < 3; ++step) {
    p.set_grad(g.clone());
    pd.set_grad(g.to(kCuda));
    opt.step();
    opt_d.step();
  }
  check_close(host(pd), values(p), kDeviceTolerance);
}

using Net =
    nn::Sequential<nn::Input<1, 28, 28>, nn::Conv2d<8, 3>, nn::ReLU, nn::Conv2d<16, 3>, nn::ReLU, nn::MaxPool2d<2>,
                   nn::Dropout, nn::Flatten, nn::Linear<32>, nn::ReLU, nn::Dropout, nn::Linear<10>, nn::LogSoftmax>;

}  // namespace

TEST_CASE("optimizers update parameters on the device as on the CPU", "[cuda]") {
  check_optimizer([](std::vector<Tensor> p) {
    return optim::SGD(p, {.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-3, .nesterov = true});
  });
  check_optimizer([](std::vector<Tensor> p) { return optim::Adadelta(p, {.lr = 1.0, .weight_decay = 1e-2}); });
  check_optimizer([](std::vector<Tensor> p) { return optim::Adam(p, {.lr = 1e-2, .amsgrad = true}); });
  check_optimizer([](std::vector<Tensor> p) { return optim::AdamW(p, {.lr = 1e-2, .weight_decay = 0.1}); });
}

TEST_CASE("a network trained on the device follows the CPU run step by step", "[cuda]") {
  manual_seed(5);
  Net cpu_net;
  Net dev_net;
  dev_net.load_state_dict(cpu_net.state_dict());
  dev_net.to(kCuda);
  for (const Tensor& p : dev_net.parameters()) CHECK(p.device() == kCuda);
  // SGD: its update is linear in the gradient, so the runs stay as close as the kernels
  // are. (Adadelta's first steps move each weight by about ±sqrt(eps / (1 - rho)) whatever
  // the gradient's size, so a gradient that is zero up to rounding may step either way;
  // its rule is compared on identical gradients above.)
  optim::SGD opt(cpu_net.parameters(), {.lr = 0.05, .momentum = 0.9});
  optim::SGD opt_d(dev_net.parameters(), {.lr = 0.05, .momentum = 0.9});
  const Tensor x = input32({16, 1, 28, 28}, 80, false);
  const Tensor target = from_vector<std::int64_t>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5}, {16});
  const Tensor x_d = x.to(kCuda), target_d = target.to(kCuda);
  for (int step = 0; step < 5; ++step) {
    INFO("step " << step);
    opt.zero_grad();
    opt_d.zero_grad();
    manual_seed(100 + step);  // the same dropout masks for both runs
    const Tensor loss = nll_loss(cpu_net(x), target);
    manual_seed(100 + step);
    const Tensor loss_d = nll_loss(dev_net(x_d), target_d);
    CHECK(loss_d.item() == Approx(loss.item()).epsilon(1e-4));
    loss.backward();
    loss_d.backward();
    opt.step();
    opt_d.step();
  }
  const auto named = cpu_net.named_parameters();
  const auto named_d = dev_net.named_parameters();
  for (std::size_t i = 0; i < named.size(); ++i) {
    INFO(named[i].first);
    check_close(host(named_d[i].second), values(named[i].second), 1e-4);
  }
}

TEST_CASE("residual blocks (identity and projection) train on the device as on the CPU", "[cuda]") {
  using Block =
      nn::Residual<nn::Conv2d<4, 3, 1, 1>, nn::BatchNorm2d, nn::ReLU, nn::Conv2d<4, 3, 1, 1>, nn::BatchNorm2d>;
  using Down = nn::Residual<nn::Body<nn::Conv2d<8, 3, 2, 1>, nn::BatchNorm2d>,
                            nn::Shortcut<nn::Conv2d<8, 1, 2, 0>, nn::BatchNorm2d>>;
  using ResNet = nn::Sequential<nn::Input<4, 8, 8>, Block, nn::ReLU, Down, nn::ReLU, nn::Flatten, nn::Linear<10>>;
  manual_seed(6);
  ResNet cpu_net;
  ResNet dev_net;
  dev_net.load_state_dict(cpu_net.state_dict());
  dev_net.to(kCuda);
  const Tensor x = input32({6, 4, 8, 8}, 81);
  const Tensor x_d = on_device(x);
  const Tensor target = from_vector<std::int64_t>({0, 1, 2, 3, 4, 5}, {6});
  nll_loss(log_softmax(cpu_net(x), 1), target).backward();
  const Tensor loss_d = nll_loss(log_softmax(dev_net(x_d), 1), target.to(kCuda));
  loss_d.backward();
  check_close(host(x_d.grad()), values(x.grad()), kDeviceTolerance);
  const auto named = cpu_net.named_parameters();
  const auto named_d = dev_net.named_parameters();
  REQUIRE(named.size() == named_d.size());
  for (std::size_t i = 0; i < named.size(); ++i) {
    INFO(named[i].first);
    check_close(host(named_d[i].second.grad()), values(named[i].second.grad()), kDeviceTolerance);
  }
  const auto buffers = cpu_net.named_buffers();
  const auto buffers_d = dev_net.named_buffers();
  for (std::size_t i = 0; i < buffers.size(); ++i) {  // running statistics, and the batch count
    INFO(buffers[i].first);
    const Tensor b = buffers[i].second.to(DType::float64), b_d = host(buffers_d[i].second).to(DType::float64);
    check_close(b_d, values(b), kDeviceTolerance);
  }
}

TEST_CASE("device models and checkpoints save and load through the host", "[cuda]") {
  const tinynet::testing::TempDir dir;
  manual_seed(6);
  Net net;
  net.to(kCuda);
  optim::Adam opt(net.parameters(), {.lr = 1e-3});
  const Tensor x = input32({4, 1, 28, 28}, 81, false).to(kCuda);
  nll_loss(net(x), from_vector<std::int64_t>({1, 2, 3, 4}, {4}).to(kCuda)).backward();
  opt.step();
  save(net, dir / "model.tnet");
  Net loaded;
  load(loaded, dir / "model.tnet");
  const auto a = net.named_parameters();
  const auto b = loaded.named_parameters();
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(values(host(a[i].second)) == values(b[i].second));

  optim::StepLR sched(opt, 1, 0.7);
  save_checkpoint(dir / "ckpt.tnet", net, opt, sched, default_generator(), {.epoch = 1, .step = 0});
  Net resumed;
  resumed.to(kCuda);
  optim::Adam opt2(resumed.parameters(), {.lr = 1e-3});
  optim::StepLR sched2(opt2, 1, 0.7);
  load_checkpoint(dir / "ckpt.tnet", resumed, opt2, sched2, default_generator());
  opt.zero_grad();
  opt2.zero_grad();
  manual_seed(8);  // the same dropout masks for both
  nll_loss(net(x), from_vector<std::int64_t>({1, 2, 3, 4}, {4}).to(kCuda)).backward();
  manual_seed(8);
  nll_loss(resumed(x), from_vector<std::int64_t>({1, 2, 3, 4}, {4}).to(kCuda)).backward();
  opt.step();
  opt2.step();
  const auto c = resumed.named_parameters();
  const auto n = net.named_parameters();
  for (std::size_t i = 0; i < c.size(); ++i) CHECK(values(host(c[i].second)) == values(host(n[i].second)));
}

TEST_CASE("a steady-state training step allocates no new device memory", "[cuda]") {
  manual_seed(7);
  Net net;
  net.to(kCuda);
  optim::Adadelta opt(net.parameters());
  const Tensor x = input32({8, 1, 28, 28}, 82, false).to(kCuda);
  const Tensor target = from_vector<std::int64_t>({0, 1, 2, 3, 4, 5, 6, 7}, {8}).to(kCuda);
  auto step = [&] {
    opt.zero_grad();
    const Tensor loss = nll_loss(net(x), target);
    loss.backward();
    opt.step();
  };
  step();
  step();
  const AllocatorStats before = cuda_allocator(0).stats();
  for (int i = 0; i < 3; ++i) step();
  const AllocatorStats after = cuda_allocator(0).stats();
  CHECK(after.requests > before.requests);
  CHECK(after.system_allocs == before.system_allocs);
}
