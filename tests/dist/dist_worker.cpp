// One rank of a multi-process test, started by run_ranks.py with RANK, WORLD_SIZE,
// MASTER_ADDR and MASTER_PORT set. Modes:
//   collectives          sum/avg all-reduce (sizes 0, 1, odd, >= 4M), broadcast, allgather, barrier
//   ddp STEPS BATCH MODEL [CAP_MB]   DDP vs. one process with batch WORLD*BATCH; MODEL seq|free
//   no_sync STEPS BATCH K   K micro-batches per step, all but the last under no_sync(), vs. one
//                        process with batch WORLD*K*BATCH
//   train STEPS          DDP training that prints "step N" (for the fault tests)
//   mismatch BAD_RANK    BAD_RANK builds a different model: DDP must refuse at start-up
//   buckets BAD_RANK     BAD_RANK uses a different bucket size
//   join [HOLD]          rendezvous and a barrier only; rank 0 then keeps its store up HOLD s
// Flags after the mode: --timeout SECONDS (default 20), --init METHOD (default env://). Errors exit with the training
// examples' exit codes (examples/common/exit_codes.hpp), so the tests check that mapping too.

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <tinynet/dist/dist.hpp>
#include <tinynet/optim/sgd.hpp>
#include <tinynet/tinynet.hpp>
#include <vector>

#include "exit_codes.hpp"

using namespace tinynet;
namespace nn = tinynet::nn;
using dist::ProcessGroup;
using dist::ReduceOp;

namespace {

using SeqNet = nn::Sequential<nn::Input<1, 8, 8>, nn::Conv2d<4, 3>, nn::ReLU, nn::MaxPool2d<2>, nn::Flatten,
                              nn::Linear<16>, nn::ReLU, nn::Linear<10>, nn::LogSoftmax>;

// Free-form: a shared layer applied twice and a skip connection.
template <int Hidden>
struct FreeNet : nn::Module<FreeNet<Hidden>> {
  nn::Linear<Hidden> fc1{64};
  nn::Linear<Hidden> mid{Hidden};
  nn::Linear<10> out{Hidden};
  Tensor forward(const Tensor& x) {
    Tensor h = relu(fc1(x.flatten(1)));
    h = h + relu(mid(relu(mid(h))));
    return log_softmax(out(h), 1);
  }
  template <class V>
  void visit(V&& v) {
    v("fc1", fc1);
    v("mid", mid);
    v("out", out);
  }
};

[[noreturn]] void fail(const std::string& what) { throw Error("check failed: " + what); }

std::uint64_t bytes_hash(const void* p, std::size_t n, std::uint64_t h = 1469598103934665603ull) {
  const auto* c = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ c[i]) * 1099511628211ull;
  return h;
}

// Whether every rank passed the same hash (each rank passes its own).
bool all_equal(ProcessGroup& pg, std::uint64_t h) {
  Tensor mine = empty({1}, {DType::int64});
  *mine.data<std::int64_t>() = static_cast<std::int64_t>(h);
  Tensor all = empty({pg.size()}, {DType::int64});
  pg.allgather(mine, all);
  for (int r = 0; r < pg.size(); ++r)
    if (all.data<std::int64_t>()[r] != static_cast<std::int64_t>(h)) return false;
  return true;
}

void check_identical(ProcessGroup& pg, std::uint64_t h, const std::string& what) {
  if (!all_equal(pg, h)) fail(what + " differs between ranks");
}

template <typename T>
void collective_sum_avg(ProcessGroup& pg, std::int64_t n) {
  const int w = pg.size(), r = pg.rank();
  const DType dt = dtype_of<T>();
  Tensor s = empty({n}, {dt}), a = empty({n}, {dt});
  for (std::int64_t i = 0; i < n; ++i)
    s.data<T>()[i] = a.data<T>()[i] = static_cast<T>(r + 1) + static_cast<T>(i % 13) * T(0.25);
  const auto t0 = std::chrono::steady_clock::now();
  pg.allreduce(s, ReduceOp::sum);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if constexpr (std::is_floating_point_v<T>) pg.allreduce(a, ReduceOp::avg);  // avg is for floating tensors
  for (std::int64_t i = 0; i < n; ++i) {
    // Every term is a multiple of 1/4 far below 2^20: the sums are exact in any order.
    const T sum = static_cast<T>(w * (w + 1) / 2) + static_cast<T>(w) * static_cast<T>(i % 13) * T(0.25);
    if (s.data<T>()[i] != sum) fail("sum of " + std::to_string(n) + " at " + std::to_string(i));
    if (std::is_floating_point_v<T> && a.data<T>()[i] != sum / static_cast<T>(w))
      fail("avg of " + std::to_string(n) + " at " + std::to_string(i));
  }
  const std::uint64_t avg_hash = std::is_floating_point_v<T> ? bytes_hash(a.raw_data(), a.nbytes()) : 0;
  check_identical(pg, bytes_hash(s.raw_data(), s.nbytes(), avg_hash), "all-reduce result of " + std::to_string(n));
  std::printf("allreduce %s n=%" PRId64 " ok (%.2f ms)\n", dtype_name(dt), n, ms);
}

int collectives(ProcessGroup& pg) {
  for (std::int64_t n : {0, 1, 7, 1001, (4 << 20) + 3}) collective_sum_avg<float>(pg, n);
  collective_sum_avg<double>(pg, 1001);
  collective_sum_avg<std::int64_t>(pg, 9);
  const int root = pg.size() - 1;
  Tensor b = full({1001}, pg.rank() * 1.5);
  pg.broadcast(b, root);
  for (std::int64_t i = 0; i < b.numel(); ++i)
    if (b.data<float>()[i] != static_cast<float>(root * 1.5)) fail("broadcast");
  Tensor g = from_vector<std::int64_t>({pg.rank(), pg.rank() * 10, pg.rank() * 100}, {3});
  Tensor all = empty({3 * pg.size()}, {DType::int64});
  pg.allgather(g, all);
  for (int r = 0; r < pg.size(); ++r)
    for (int k = 0; k < 3; ++k)
      if (all.data<std::int64_t>()[3 * r + k] != r * (k == 0 ? 1 : k == 1 ? 10 : 100)) fail("allgather");
  pg.barrier();
  std::printf("collectives OK on rank %d of %d\n", pg.rank(), pg.size());
  return 0;
}

// Rows [first, first + count) of x.
Tensor rows(const Tensor& x, std::int64_t first, std::int64_t count) {
  Shape s = x.shape();
  const std::int64_t row = x.numel() / s[0];
  std::vector<std::int64_t> dims;
  for (int d = 0; d < s.rank(); ++d) dims.push_back(d == 0 ? count : s[d]);
  Tensor out = empty(Shape(dims), x.options());
  std::memcpy(out.raw_data(),
              static_cast<const char*>(x.raw_data()) + first * row * static_cast<std::int64_t>(element_size(x.dtype())),
              out.nbytes());
  return out;
}

// Largest |model - reference| over all parameters (float32 models).
template <class Model, class Reference>
double max_param_diff(Model& model, Reference& reference) {
  double max_diff = 0;
  for (const auto& [name, p] : model.named_parameters()) {
    const Tensor q = reference.state_dict().at(name);
    const auto* a = static_cast<const float*>(p.raw_data());
    const auto* b = static_cast<const float*>(q.raw_data());
    for (std::int64_t i = 0; i < p.numel(); ++i)
      max_diff = std::max(max_diff, std::abs(static_cast<double>(a[i]) - b[i]));
  }
  return max_diff;
}

template <class Model>
std::uint64_t params_hash(Model& model) {
  std::uint64_t h = 1469598103934665603ull;
  for (const auto& [name, p] : model.named_parameters()) h = bytes_hash(p.raw_data(), p.nbytes(), h);
  return h;
}

template <class Model>
int ddp_vs_single(const std::shared_ptr<ProcessGroup>& pg, int steps, std::int64_t batch, double cap_mb) {
  const int w = pg->size(), r = pg->rank();
  manual_seed(7);
  const Tensor x = randn({steps * w * batch, 1, 8, 8});
  std::vector<std::int64_t> labels;
  for (std::int64_t i = 0; i < steps * w * batch; ++i) labels.push_back((i * 7 + 3) % 10);
  const Tensor y = from_vector<std::int64_t>(labels, {steps * w * batch});

  manual_seed(100);
  Model reference;  // what rank 0 starts from
  manual_seed(100 + static_cast<std::uint64_t>(r));
  Model model;  // a different start on every other rank: DDP must replace it with rank 0's
  dist::DistributedDataParallel ddp(model, pg, {.bucket_cap_mb = cap_mb, .first_bucket_cap_mb = cap_mb});
  std::printf("buckets: %zu\n", ddp.bucket_names().size());
  for (const auto& [name, p] : model.named_parameters()) {
    const Tensor q = reference.state_dict().at(name);
    if (std::memcmp(p.raw_data(), q.raw_data(), p.nbytes()) != 0)
      fail("rank 0's parameters were not broadcast: " + name);
  }

  optim::SGD opt(model.parameters(), {.lr = 0.05, .momentum = 0.9});
  optim::SGD ref_opt(reference.parameters(), {.lr = 0.05, .momentum = 0.9});
  for (int s = 0; s < steps; ++s) {
    const std::int64_t first = static_cast<std::int64_t>(s) * w * batch;
    opt.zero_grad();
    nll_loss(ddp(rows(x, first + r * batch, batch)), rows(y, first + r * batch, batch)).backward();
    opt.step();
    ref_opt.zero_grad();
    nll_loss(reference(rows(x, first, w * batch)), rows(y, first, w * batch)).backward();
    ref_opt.step();
  }
  const double max_diff = max_param_diff(model, reference);
  std::printf("max |ddp - single| = %.3g after %d steps\n", max_diff, steps);
  // Float32 sums in another order: a few ulps per step on values of order 0.1-1, compounded
  // over the steps by momentum; 1e-5 is well above that and far below any real error
  // (a missing average or a stale gradient moves parameters by ~1e-2).
  if (max_diff > 1e-5) fail("DDP parameters differ from the single-process run by " + std::to_string(max_diff));
  check_identical(*pg, params_hash(model), "parameters after training");
  std::printf("ddp OK on rank %d of %d\n", r, w);
  return 0;
}

template <class Model>
std::uint64_t grads_hash(Model& model) {
  std::uint64_t h = 1469598103934665603ull;
  for (const auto& [name, p] : model.named_parameters()) h = bytes_hash(p.grad().raw_data(), p.grad().nbytes(), h);
  return h;
}

// Gradient accumulation: each rank runs K micro-batches of BATCH rows per step, the first
// K-1 under no_sync(), each loss scaled by 1/K; the single process trains on the step's
// WORLD*K*BATCH rows at once. Same parameters expected, as for plain DDP.
int no_sync_vs_single(const std::shared_ptr<ProcessGroup>& pg, int steps, std::int64_t batch, int k) {
  const int w = pg->size(), r = pg->rank();
  const std::int64_t per_step = static_cast<std::int64_t>(w) * k * batch;
  manual_seed(7);
  const Tensor x = randn({steps * per_step, 1, 8, 8});
  std::vector<std::int64_t> labels;
  for (std::int64_t i = 0; i < steps * per_step; ++i) labels.push_back((i * 7 + 3) % 10);
  const Tensor y = from_vector<std::int64_t>(labels, {steps * per_step});

  manual_seed(100);
  SeqNet reference;
  manual_seed(100);
  SeqNet model;
  dist::DistributedDataParallel ddp(model, pg, {.bucket_cap_mb = 0.001, .first_bucket_cap_mb = 0.001});
  optim::SGD opt(model.parameters(), {.lr = 0.05, .momentum = 0.9});
  optim::SGD ref_opt(reference.parameters(), {.lr = 0.05, .momentum = 0.9});
  for (int s = 0; s < steps; ++s) {
    const std::int64_t mine = static_cast<std::int64_t>(s) * per_step + static_cast<std::int64_t>(r) * k * batch;
    auto micro_batch = [&](int m) {
      const std::int64_t first = mine + static_cast<std::int64_t>(m) * batch;
      (nll_loss(ddp(rows(x, first, batch)), rows(y, first, batch)) / k).backward();
    };
    opt.zero_grad();
    {
      auto no_sync = ddp.no_sync();
      for (int m = 0; m < k - 1; ++m) micro_batch(m);
      // Each rank saw other rows: gradients that were not all-reduced differ between ranks.
      if (w > 1 && all_equal(*pg, grads_hash(model))) fail("gradients were all-reduced inside no_sync()");
    }
    micro_batch(k - 1);
    check_identical(*pg, grads_hash(model), "gradients after the synced backward");
    opt.step();
    ref_opt.zero_grad();
    nll_loss(reference(rows(x, static_cast<std::int64_t>(s) * per_step, per_step)),
             rows(y, static_cast<std::int64_t>(s) * per_step, per_step))
        .backward();
    ref_opt.step();
  }
  const double max_diff = max_param_diff(model, reference);
  std::printf("max |ddp with no_sync - single| = %.3g after %d steps of %d micro-batches\n", max_diff, steps, k);
  // The tolerance of ddp_vs_single: summation order only.
  if (max_diff > 1e-5)
    fail("accumulated DDP parameters differ from the single-process run by " + std::to_string(max_diff));
  std::printf("no_sync OK on rank %d of %d\n", r, w);
  return 0;
}

// BatchNorm's running statistics with DDP: each rank trains on other rows, so its own
// statistics drift from rank 0's; with broadcast_buffers (the default) every forward starts
// from rank 0's, so an eval-mode forward (which updates nothing) leaves them identical on
// every rank. With broadcast_buffers off they must differ: the check has teeth.
int buffers(const std::shared_ptr<ProcessGroup>& pg, bool broadcast) {
  using BnNet = nn::Sequential<nn::Input<1, 8, 8>, nn::Conv2d<4, 3>, nn::BatchNorm2d, nn::ReLU, nn::Flatten,
                               nn::Linear<10>, nn::LogSoftmax>;
  manual_seed(5);
  BnNet model;
  dist::DistributedDataParallel ddp(model, pg, {.broadcast_buffers = broadcast});
  optim::SGD opt(model.parameters(), {.lr = 0.05});
  manual_seed(static_cast<std::uint64_t>(40 + pg->rank()));  // different rows on every rank
  const Tensor x = randn({16, 1, 8, 8});
  std::vector<std::int64_t> labels;
  for (std::int64_t i = 0; i < 16; ++i) labels.push_back((i * 3 + pg->rank()) % 10);
  const Tensor y = from_vector<std::int64_t>(labels, {16});
  for (int s = 0; s < 3; ++s) {
    opt.zero_grad();
    nll_loss(ddp(x), y).backward();
    opt.step();
  }
  auto buffers_hash = [&] {
    std::uint64_t h = 1469598103934665603ull;
    for (const auto& [name, b] : model.named_buffers()) h = bytes_hash(b.raw_data(), b.nbytes(), h);
    return h;
  };
  if (pg->size() > 1 && all_equal(*pg, buffers_hash())) fail("running statistics equal after training on other rows");
  model.eval();
  (void)ddp(x);
  const bool same = all_equal(*pg, buffers_hash());
  if (broadcast && !same) fail("buffers differ between ranks after a forward with broadcast_buffers");
  if (!broadcast && same) fail("buffers equal between ranks without broadcast_buffers");
  std::printf("buffers OK on rank %d (broadcast_buffers %s)\n", pg->rank(), broadcast ? "on" : "off");
  return 0;
}

// A head only some ranks use: rank 0 adds the spare head's output, the others do not.
struct SpareHead : nn::Module<SpareHead> {
  nn::Linear<16> body{64};
  nn::Linear<10> head{16};
  nn::Linear<10> spare{16};
  bool use_spare = false;
  Tensor forward(const Tensor& x) {
    Tensor h = relu(body(x.flatten(1)));
    return log_softmax(use_spare ? head(h) + spare(h) : head(h), 1);
  }
  template <class V>
  void visit(V&& v) {
    v("body", body);
    v("head", head);
    v("spare", spare);
  }
};

// find_unused_parameters: the ranks disagree on which parameters they use; DDP must still
// average every gradient (zeros where unused) and train exactly like one process on the
// mean of the ranks' losses.
int unused_vs_single(const std::shared_ptr<ProcessGroup>& pg, int steps, std::int64_t batch) {
  const int w = pg->size(), r = pg->rank();
  manual_seed(9);
  const Tensor x = randn({steps * w * batch, 1, 8, 8});
  std::vector<std::int64_t> labels;
  for (std::int64_t i = 0; i < steps * w * batch; ++i) labels.push_back((i * 5 + 1) % 10);
  const Tensor y = from_vector<std::int64_t>(labels, {steps * w * batch});
  manual_seed(101);
  SpareHead reference;
  manual_seed(101);
  SpareHead model;
  model.use_spare = r == 0;
  dist::DistributedDataParallel ddp(model, pg, {.find_unused_parameters = true});
  optim::SGD opt(model.parameters(), {.lr = 0.05, .momentum = 0.9});
  optim::SGD ref_opt(reference.parameters(), {.lr = 0.05, .momentum = 0.9});
  for (int s = 0; s < steps; ++s) {
    const std::int64_t first = static_cast<std::int64_t>(s) * w * batch;
    opt.zero_grad();
    nll_loss(ddp(rows(x, first + r * batch, batch)), rows(y, first + r * batch, batch)).backward();
    opt.step();
    ref_opt.zero_grad();
    Tensor total;
    for (int k = 0; k < w; ++k) {
      reference.use_spare = k == 0;
      Tensor loss = nll_loss(reference(rows(x, first + k * batch, batch)), rows(y, first + k * batch, batch));
      total = total.defined() ? total + loss : loss;
    }
    (total / static_cast<double>(w)).backward();
    ref_opt.step();
  }
  const double max_diff = max_param_diff(model, reference);
  std::printf("max |ddp - single| = %.3g after %d steps, spare head used on rank 0 only\n", max_diff, steps);
  if (max_diff > 1e-5)
    fail("DDP with unused parameters differs from the single-process run by " + std::to_string(max_diff));
  check_identical(*pg, params_hash(model), "parameters after training");
  std::printf("unused OK on rank %d of %d\n", r, w);
  return 0;
}

int train(const std::shared_ptr<ProcessGroup>& pg, int steps) {
  manual_seed(1);
  FreeNet<256> model;
  dist::DistributedDataParallel ddp(model, pg);
  optim::SGD opt(model.parameters(), {.lr = 0.01});
  const Tensor x = randn({64, 1, 8, 8});
  std::vector<std::int64_t> labels(64, 3);
  const Tensor y = from_vector<std::int64_t>(labels, {64});
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    nll_loss(ddp(x), y).backward();
    opt.step();
    std::printf("step %d\n", s);
    std::fflush(stdout);
  }
  pg->barrier();
  return 0;
}

template <class M>
int build_ddp(const std::shared_ptr<ProcessGroup>& pg, double cap_mb) {
  M model;
  dist::DistributedDataParallel ddp(model, pg, {.bucket_cap_mb = cap_mb, .first_bucket_cap_mb = cap_mb});
  pg->barrier();
  std::printf("models agree\n");
  return 0;
}

int run(int argc, char** argv) {
  if (argc < 2) throw ValueError("usage: dist_worker MODE [ARGS] [--timeout SECONDS]");
  std::vector<std::string> args(argv + 1, argv + argc);
  double timeout_s = 20;
  std::string init = "env://";
  for (std::size_t i = 0; i + 1 < args.size();) {
    if (args[i] != "--timeout" && args[i] != "--init") {
      ++i;
      continue;
    }
    if (args[i] == "--timeout")
      timeout_s = std::stod(args[i + 1]);
    else
      init = args[i + 1];
    args.erase(args.begin() + static_cast<std::ptrdiff_t>(i), args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
  }
  set_num_threads(1);
  const std::string mode = args[0];
  auto arg = [&](std::size_t i) -> const std::string& {
    if (i >= args.size()) throw ValueError("dist_worker " + mode + ": missing argument " + std::to_string(i));
    return args[i];
  };
  auto pg =
      dist::init_process_group("gloo", init, std::chrono::milliseconds(static_cast<std::int64_t>(timeout_s * 1000)));
  if (mode == "collectives") return collectives(*pg);
  if (mode == "ddp") {
    const int steps = std::stoi(arg(1));
    const std::int64_t batch = std::stoll(arg(2));
    const double cap = args.size() > 4 ? std::stod(args[4]) : 25.0;
    if (arg(3) == "seq") return ddp_vs_single<SeqNet>(pg, steps, batch, cap);
    return ddp_vs_single<FreeNet<32>>(pg, steps, batch, cap);
  }
  if (mode == "no_sync") return no_sync_vs_single(pg, std::stoi(arg(1)), std::stoll(arg(2)), std::stoi(arg(3)));
  if (mode == "train") return train(pg, std::stoi(arg(1)));
  if (mode == "buffers") return buffers(pg, arg(1) == "on");
  if (mode == "unused") return unused_vs_single(pg, std::stoi(arg(1)), std::stoll(arg(2)));
  if (mode == "mismatch")
    return pg->rank() == std::stoi(arg(1)) ? build_ddp<FreeNet<24>>(pg, 25) : build_ddp<FreeNet<32>>(pg, 25);
  if (mode == "buckets") return build_ddp<FreeNet<32>>(pg, pg->rank() == std::stoi(arg(1)) ? 0.001 : 25);
  if (mode == "join") {
    pg->barrier();
    std::printf("joined as rank %d of %d\n", pg->rank(), pg->size());
    std::fflush(stdout);
    // Rank 0 hosts the store: held up HOLD seconds, a process that comes late still reaches it.
    if (pg->rank() == 0 && args.size() > 1)
      std::this_thread::sleep_for(std::chrono::duration<double>(std::stod(arg(1))));
    return 0;
  }
  throw ValueError("dist_worker: unknown mode " + mode);
}

}  // namespace

int main(int argc, char** argv) {
  return job::run_guarded([&] { return run(argc, argv); });
}
