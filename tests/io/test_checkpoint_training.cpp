#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <tinynet/io/io.hpp>
#include <tinynet/tinynet.hpp>

#include "temp_dir.hpp"

using namespace tinynet;

namespace {

using Net = nn::Sequential<nn::Input<1, 8, 8>, nn::Conv2d<4, 3>, nn::ReLU, nn::MaxPool2d<2>, nn::Dropout, nn::Flatten,
                           nn::Linear<16>, nn::ReLU, nn::Dropout, nn::Linear<3>, nn::LogSoftmax>;

// Batches depend only on the step index, never on the default generator (dropout uses that).
struct TrainingRun {
  Net net;
  optim::Adadelta opt;
  optim::StepLR sched;
  explicit TrainingRun(std::uint64_t init_seed)
      : net((manual_seed(init_seed), Net(nn::Dropout(0.3), nn::Dropout(0.2)))),
        opt(net.parameters(), {.lr = 1.0}),
        sched(opt, 1, 0.7) {}

  void train_steps(int from, int to) {
    for (int s = from; s < to; ++s) {
      Generator data_gen(1000 + static_cast<std::uint64_t>(s));
      const Tensor x = randn({5, 1, 8, 8}, {}, data_gen);
      std::vector<std::int64_t> y(5);
      for (int i = 0; i < 5; ++i) y[static_cast<std::size_t>(i)] = (s + i) % 3;
      opt.zero_grad();
      nll_loss(net(x), from_vector(y, {5})).backward();
      opt.step();
      if (s % 2 == 1) sched.step();  // two steps per "epoch"
    }
  }
};

}  // namespace

TEST_CASE("checkpoint: a resumed run matches an uninterrupted one bitwise (Sequential, Adadelta, StepLR, dropout)",
          "[io][checkpoint][resume]") {
  const tinynet::testing::TempDir dir;
  const auto path = dir / "resume.ckpt";
  constexpr int kSteps = 8;
  for (int k : {1, 3, 6}) {
    INFO("stopping after step " << k);
    TrainingRun full(42);
    full.train_steps(0, kSteps);

    TrainingRun first(42);
    first.train_steps(0, k);
    save_checkpoint(path, first.net, first.opt, first.sched, default_generator(), {.epoch = k / 2, .step = k});

    TrainingRun resumed(7);  // different initial weights: everything must come from the file
    const TrainingProgress p = load_checkpoint(path, resumed.net, resumed.opt, resumed.sched, default_generator());
    CHECK(p.step == k);
    resumed.train_steps(k, kSteps);

    const auto a = full.net.named_parameters(), b = resumed.net.named_parameters();
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      INFO(a[i].first);
      CHECK(std::memcmp(a[i].second.raw_data(), b[i].second.raw_data(), a[i].second.nbytes()) == 0);
    }
    CHECK(resumed.opt.lr(0) == full.opt.lr(0));
  }
}
