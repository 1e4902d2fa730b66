// Checkpoints: the layout round trips, malformed checkpoints are rejected, and a run
// resumed from a checkpoint computes bit-for-bit the same parameters as one that never
// stopped.

#include <catch2/catch.hpp>

#include "io/io_test_support.hpp"

using namespace tinynet;
using namespace io_test;

namespace {

// ---- a small training setup of the test's own -------------------------------------------

// y = linear(dropout(relu(linear(x, w1)), 0.25), w2); dropout draws from the Generator,
// so the generator's state is part of what must be restored.
struct TinyNet {
  Tensor w1, w2;

  explicit TinyNet(Generator& g)
      : w1(uniform({8, 4}, -0.5, 0.5, {}, g).requires_grad_()),
        w2(uniform({3, 8}, -0.5, 0.5, {}, g).requires_grad_()) {}

  Tensor forward(const Tensor& x, Generator& g) const {
    return linear(dropout(relu(linear(x, w1)), 0.25, true, g), w2);
  }
  std::vector<Tensor> parameters() const { return {w1, w2}; }

  StateDict state_dict() const {
    StateDict sd;
    sd.insert("fc1.weight", w1.detach());
    sd.insert("fc2.weight", w2.detach());
    return sd;
  }
  void load_state_dict(const StateDict& sd) {
    w1.copy_(sd.at("fc1.weight"));
    w2.copy_(sd.at("fc2.weight"));
  }
};

// SGD with momentum written out by hand: buf = mu * buf + grad (buf = grad on the first
// step, as PyTorch does); w -= lr * buf. The buffers appear on the first step, so a fresh
// optimizer's state_dict has fewer entries than a trained one's.
struct MomentumSgd {
  std::vector<Tensor> params;
  double momentum = 0.9;
  std::vector<Tensor> buffers;
  std::int64_t steps = 0;

  explicit MomentumSgd(std::vector<Tensor> p) : params(std::move(p)), buffers(params.size()) {}

  void zero_grad() {
    for (Tensor& p : params) p.set_grad(Tensor());
  }
  void step(double lr) {
    for (std::size_t i = 0; i < params.size(); ++i) {
      const Tensor g = params[i].grad();
      if (!buffers[i].defined()) {
        buffers[i] = g.clone();
      } else {
        float* b = buffers[i].data<float>();
        const float* gp = g.data<float>();
        for (std::int64_t j = 0; j < g.numel(); ++j) b[j] = static_cast<float>(momentum) * b[j] + gp[j];
      }
      float* w = params[i].data<float>();
      const float* b = buffers[i].data<float>();
      for (std::int64_t j = 0; j < g.numel(); ++j) w[j] -= static_cast<float>(lr) * b[j];
    }
    ++steps;
  }

  StateDict state_dict() const {
    StateDict sd;
    sd.insert("step", io::detail::int64_scalar(steps));
    for (std::size_t i = 0; i < buffers.size(); ++i)
      if (buffers[i].defined()) sd.insert("momentum_buffer." + std::to_string(i), buffers[i]);
    return sd;
  }
  void load_state_dict(const StateDict& sd) {
    steps = sd.integer("step");
    for (std::size_t i = 0; i < buffers.size(); ++i) {
      const std::string name = "momentum_buffer." + std::to_string(i);
      buffers[i] = sd.contains(name) ? sd.at(name).clone() : Tensor();
    }
  }
};

// lr = base * gamma^(epochs done), stepped once per epoch (like StepLR with step_size 1).
struct EpochDecay {
  double base_lr = 0.2, gamma = 0.5;
  std::int64_t epochs_done = 0;
  double lr() const { return base_lr * std::pow(gamma, static_cast<double>(epochs_done)); }
  void step() { ++epochs_done; }
  StateDict state_dict() const {
    StateDict sd;
    sd.insert("last_epoch", io::detail::int64_scalar(epochs_done));
    return sd;
  }
  void load_state_dict(const StateDict& sd) { epochs_done = sd.integer("last_epoch"); }
};

static_assert(Stateful<TinyNet> && Stateful<MomentumSgd> && Stateful<EpochDecay>);

constexpr std::int64_t kStepsPerEpoch = 3;
constexpr std::int64_t kTotalSteps = 10;

struct Data {
  Tensor x, y;
};

Data make_data() {
  Generator g(123);
  std::vector<std::int64_t> labels(16);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int64_t>(i % 3);
  return {randn({16, 4}, {}, g), from_vector(labels, {16})};
}

struct Run {
  Generator gen;
  TinyNet model;
  MomentumSgd optimizer;
  EpochDecay scheduler;
  explicit Run(std::uint64_t seed) : gen(seed), model(gen), optimizer(model.parameters()) {}

  void train(const Data& d, std::int64_t from_step, std::int64_t to_step) {
    for (std::int64_t step = from_step; step < to_step; ++step) {
      const Tensor loss = cross_entropy(model.forward(d.x, gen), d.y);
      optimizer.zero_grad();
      loss.backward();
      optimizer.step(scheduler.lr());
      if ((step + 1) % kStepsPerEpoch == 0) scheduler.step();
    }
  }
};

Checkpoint sample_checkpoint() {
  Checkpoint c;
  c.model.insert("conv1.weight", randn({2, 1, 3, 3}));
  c.model.insert("bn.num_batches_tracked", io::detail::int64_scalar(12));
  c.optimizer.insert("state.0.exp_avg", randn({5}, {.dtype = DType::float64}));
  c.scheduler.insert("last_epoch", io::detail::int64_scalar(3));
  c.epoch = 4;
  c.step = 1234567890123;
  c.rng_seed = UINT64_MAX;  // beyond double's 53 bits, and the sign bit of int64
  c.rng_offset = (std::uint64_t{1} << 63) + 12345;
  return c;
}

}  // namespace

TEST_CASE("io checkpoint: every field round trips exactly", "[io][checkpoint]") {
  const Checkpoint c = sample_checkpoint();
  TempDir dir;
  save_checkpoint(dir / "c.ckpt", c);
  const Checkpoint back = load_checkpoint(dir / "c.ckpt");
  CHECK(bitwise_equal(back.model, c.model));
  CHECK(bitwise_equal(back.optimizer, c.optimizer));
  CHECK(bitwise_equal(back.scheduler, c.scheduler));
  CHECK(back.epoch == 4);
  CHECK(back.step == 1234567890123);
  CHECK(back.rng_seed == UINT64_MAX);
  CHECK(back.rng_offset == (std::uint64_t{1} << 63) + 12345);

  // The layout is one StateDict with prefixes, readable as such.
  const StateDict flat = load_state_dict_file(dir / "c.ckpt");
  CHECK(flat.integer("epoch") == 4);
  CHECK(flat.integer("rng.seed") == -1);
  CHECK(flat.contains("model.conv1.weight"));
  CHECK(flat.contains("optimizer.state.0.exp_avg"));
  CHECK(flat.contains("scheduler.last_epoch"));
  CHECK(flat.size() == 4 + 4);
}

TEST_CASE("io checkpoint: empty parts round trip", "[io][checkpoint]") {
  TempDir dir;
  save_checkpoint(dir / "e.ckpt", Checkpoint{});
  const Checkpoint back = load_checkpoint(dir / "e.ckpt");
  CHECK(back.model.empty());
  CHECK(back.optimizer.empty());
  CHECK(back.scheduler.empty());
  CHECK(back.step == 0);
}

TEST_CASE("io checkpoint: malformed checkpoints are FormatErrors", "[io][checkpoint][hostile]") {
  TempDir dir;
  const auto path = dir / "bad.ckpt";
  const StateDict good = io::detail::checkpoint_to_state_dict(sample_checkpoint());
  auto without = [&](const std::string& drop) {
    StateDict sd;
    for (const auto& [name, t] : good)
      if (name != drop) sd.insert(name, t);
    return sd;
  };

  SECTION("a weights file") {
    save_state_dict(good, path);
    CHECK_THROWS_MATCHES(load_checkpoint(path), FormatError,
                         Says("load_checkpoint: '" + path.string() + "': is a weights file, not a checkpoint"));
  }
  SECTION("a missing scalar") {
    save_state_dict(without("rng.offset"), path, FileKind::checkpoint);
    CHECK_THROWS_MATCHES(load_checkpoint(path), FormatError, Says("checkpoint entry 'rng.offset' is missing"));
  }
  SECTION("a scalar of the wrong type") {
    StateDict sd = without("step");
    sd.insert("step", scalar_tensor(3.0, {.dtype = DType::float64}));
    save_state_dict(sd, path, FileKind::checkpoint);
    CHECK_THROWS_MATCHES(load_checkpoint(path), FormatError,
                         Says("checkpoint entry 'step' must be an int64 scalar, got float64 []"));
  }
  SECTION("an entry outside the layout") {
    StateDict sd = good;
    sd.insert("modle.typo", zeros({1}));
    save_state_dict(sd, path, FileKind::checkpoint);
    CHECK_THROWS_MATCHES(load_checkpoint(path), FormatError, Says("unexpected checkpoint entry 'modle.typo'"));
  }
  SECTION("from memory") {
    CHECK_THROWS_MATCHES(load_checkpoint_from_bytes(save_state_dict_to_bytes(good), "mem"), FormatError,
                         Says("load_checkpoint_from_bytes: mem: is a weights file"));
    const Checkpoint c = load_checkpoint_from_bytes(save_state_dict_to_bytes(good, FileKind::checkpoint));
    CHECK(c.step == 1234567890123);
  }
}

TEST_CASE("io checkpoint: a resumed run matches an uninterrupted one bit for bit", "[io][checkpoint][resume]") {
  const Data data = make_data();
  TempDir dir;
  const auto path = dir / "run.ckpt";

  Run straight(42);
  const StateDict initial = load_state_dict_from_bytes(save_state_dict_to_bytes(straight.model.state_dict()));
  straight.train(data, 0, kTotalSteps);
  REQUIRE_FALSE(bitwise_equal(straight.model.state_dict(), initial));  // it did train

  for (std::int64_t k : {1, 4, 6}) {  // mid-epoch, and on an epoch boundary
    INFO("stopped after " << k << " steps");
    Run first(42);
    first.train(data, 0, k);
    save_checkpoint(path, first.model, first.optimizer, first.scheduler, first.gen,
                    {.epoch = k / kStepsPerEpoch, .step = k});

    Run resumed(7);  // different initial weights and generator: everything must come from the file
    const auto [epoch, step] = load_checkpoint(path, resumed.model, resumed.optimizer, resumed.scheduler, resumed.gen);
    CHECK(epoch == k / kStepsPerEpoch);
    CHECK(step == k);
    CHECK(resumed.optimizer.steps == k);
    resumed.train(data, step, kTotalSteps);
    CHECK(bitwise_equal(resumed.model.state_dict(), straight.model.state_dict()));
  }
}

TEST_CASE("io checkpoint: each part of the state matters to the resumed run", "[io][checkpoint][resume]") {
  // Controls for the test above: leaving out the RNG state, the momentum buffers or the
  // scheduler changes the result, so the bitwise match is not an accident.
  const Data data = make_data();
  TempDir dir;
  const auto path = dir / "run.ckpt";
  Run straight(42);
  straight.train(data, 0, kTotalSteps);

  Run first(42);
  first.train(data, 0, 4);
  save_checkpoint(path, first.model, first.optimizer, first.scheduler, first.gen, {.epoch = 1, .step = 4});

  auto resume_with = [&](auto&& sabotage) {
    Run r(7);
    const auto [epoch, step] = load_checkpoint(path, r.model, r.optimizer, r.scheduler, r.gen);
    sabotage(r);
    r.train(data, step, kTotalSteps);
    return bitwise_equal(r.model.state_dict(), straight.model.state_dict());
  };
  CHECK(resume_with([](Run&) {}));
  CHECK_FALSE(resume_with([](Run& r) { r.gen.set_state(r.gen.seed(), 0); }));
  CHECK_FALSE(resume_with([](Run& r) { r.optimizer.buffers.assign(r.optimizer.buffers.size(), Tensor()); }));
  CHECK_FALSE(resume_with([](Run& r) { r.scheduler.epochs_done = 0; }));
}

TEST_CASE("io checkpoint: the overloads without a scheduler", "[io][checkpoint]") {
  const Data data = make_data();
  TempDir dir;
  Run a(9);
  a.train(data, 0, 2);
  save_checkpoint(dir / "noschd.ckpt", a.model, a.optimizer, a.gen, {.epoch = 0, .step = 2});
  Run b(10);
  const TrainingProgress p = load_checkpoint(dir / "noschd.ckpt", b.model, b.optimizer, b.gen);
  CHECK(p.step == 2);
  CHECK(bitwise_equal(a.model.state_dict(), b.model.state_dict()));
  CHECK(b.gen.offset() == a.gen.offset());
  CHECK(load_checkpoint(dir / "noschd.ckpt").scheduler.empty());

  // A checkpoint with scheduler state needs a scheduler to go into.
  save_checkpoint(dir / "schd.ckpt", a.model, a.optimizer, a.scheduler, a.gen, {.epoch = 0, .step = 2});
  CHECK_THROWS_MATCHES(load_checkpoint(dir / "schd.ckpt", b.model, b.optimizer, b.gen), StateDictError,
                       Says("holds scheduler state (1 entries) but no scheduler was given"));
}

TEST_CASE("io checkpoint: a model mismatch is reported before anything is loaded", "[io][checkpoint]") {
  TempDir dir;
  Checkpoint c;
  c.model.insert("fc1.weight", zeros({8, 5}));
  c.model.insert("fc2.weight", zeros({3, 8}));
  c.optimizer.insert("step", io::detail::int64_scalar(99));
  c.rng_seed = 77;
  save_checkpoint(dir / "m.ckpt", c);
  Run r(1);
  CHECK_THROWS_MATCHES(load_checkpoint(dir / "m.ckpt", r.model, r.optimizer, r.scheduler, r.gen), StateDictError,
                       Says("entry 'fc1.weight' has shape [8, 5] in the file, [8, 4] in the model"));
  CHECK(r.optimizer.steps == 0);
  CHECK(r.gen.seed() == 1);
}
