#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <tinynet/dist/dist.hpp>
#include <tinynet/optim/sgd.hpp>
#include <tinynet/tinynet.hpp>
#include <vector>

using namespace tinynet;
using namespace std::chrono_literals;

namespace {

// A one-rank Gloo group over a store of its own.
struct SoloGroup {
  dist::TCPStoreServer server;
  std::shared_ptr<dist::ProcessGroup> pg =
      std::make_shared<dist::GlooGroup>(std::make_shared<dist::TCPStore>("127.0.0.1", server.port(), 10s), 0, 1,
                                        dist::GlooOptions{.timeout = 10s, .hostname = "127.0.0.1"});
};

// A one-rank Gloo group that counts the all-reduces asked of it: in backward, DDP's only
// collective, one per bucket.
struct CountingGroup : dist::ProcessGroup {
  explicit CountingGroup(const std::shared_ptr<dist::Store>& store)
      : ProcessGroup(0, 1, store, 10s), gloo(store, 0, 1, dist::GlooOptions{.timeout = 10s, .hostname = "127.0.0.1"}) {}
  const char* backend() const override { return "gloo"; }
  void allreduce(Tensor& t, dist::ReduceOp op, std::optional<dist::Milliseconds> timeout) override {
    ++allreduces;
    gloo.allreduce(t, op, timeout);
  }
  void broadcast(Tensor& t, int root, std::optional<dist::Milliseconds> timeout) override {
    gloo.broadcast(t, root, timeout);
  }
  void allgather(const Tensor& in, Tensor& out, std::optional<dist::Milliseconds> timeout) override {
    gloo.allgather(in, out, timeout);
  }
  void barrier(std::optional<dist::Milliseconds> timeout) override { gloo.barrier(timeout); }

  dist::GlooGroup gloo;
  std::atomic<int> allreduces{0};  // DDP all-reduces on its communication thread
};

// out.weight is never used by forward when `skip` is set.
struct TwoHeads : nn::Module<TwoHeads> {
  nn::Linear<8> body{4};
  nn::Linear<3> head{8};
  nn::Linear<3> spare{8};
  bool skip = true;
  Tensor forward(const Tensor& x) {
    Tensor h = relu(body(x));
    return skip ? head(h) : head(h) + spare(h);
  }
  template <class V>
  void visit(V&& v) {
    v("body", body);
    v("head", head);
    v("spare", spare);
  }
};

// A forward returning two tensors.
struct TwoOutputs : nn::Module<TwoOutputs> {
  nn::Linear<2> a{4};
  std::pair<Tensor, Tensor> forward(const Tensor& x) { return {a(x), a(x)}; }
  template <class V>
  void visit(V&& v) {
    v("a", a);
  }
};

}  // namespace

TEST_CASE("ddp: buckets in reverse order, the first one small", "[ddp]") {
  SoloGroup g;
  using Net = nn::Sequential<nn::Input<64>, nn::Linear<256>, nn::ReLU, nn::Linear<256>, nn::ReLU, nn::Linear<10>>;
  Net net;
  // The last layer and the middle bias (11 KiB) fill the 0.2 MiB first bucket; the middle
  // weight (256 KiB) would overflow it and opens the second, 0.6 MiB, which takes the rest.
  dist::DistributedDataParallel ddp(net, g.pg, {.bucket_cap_mb = 0.6, .first_bucket_cap_mb = 0.2});
  const auto b = ddp.bucket_names();
  REQUIRE(b.size() == 2);
  CHECK(b[0] == std::vector<std::string>{"4.bias", "4.weight", "2.bias"});
  CHECK(b[1] == std::vector<std::string>{"2.weight", "0.bias", "0.weight"});
}

TEST_CASE("ddp: one rank trains exactly like no DDP", "[ddp]") {
  SoloGroup g;
  manual_seed(3);
  TwoHeads a;
  manual_seed(3);
  TwoHeads b;
  a.skip = b.skip = false;
  dist::DistributedDataParallel ddp(a, g.pg, {.bucket_cap_mb = 0.0001, .first_bucket_cap_mb = 0.0001});
  optim::SGD oa(a.parameters(), {.lr = 0.1}), ob(b.parameters(), {.lr = 0.1});
  const Tensor x = randn({5, 4});
  for (int i = 0; i < 3; ++i) {
    oa.zero_grad();
    ob.zero_grad();
    sum(ddp(x)).backward();
    sum(b(x)).backward();
    oa.step();
    ob.step();
  }
  for (const auto& [name, p] : a.named_parameters()) {
    INFO(name);
    const Tensor q = b.state_dict().at(name);
    CHECK(std::memcmp(p.raw_data(), q.raw_data(), p.nbytes()) == 0);
  }
}

TEST_CASE("ddp: a parameter left without a gradient is named at the next forward", "[ddp]") {
  SoloGroup g;
  TwoHeads m;
  dist::DistributedDataParallel ddp(m, g.pg);
  const Tensor x = randn({2, 4});
  sum(ddp(x)).backward();
  CHECK_THROWS_WITH(ddp(x), Catch::Contains("did not produce gradients for spare.weight, spare.bias") &&
                                Catch::Contains("find_unused_parameters = true"));
}

TEST_CASE("ddp: with find_unused_parameters a skipped head counts as a zero gradient", "[ddp]") {
  SoloGroup g;
  TwoHeads m;
  dist::DistributedDataParallel ddp(m, g.pg, {.find_unused_parameters = true});
  const Tensor x = randn({2, 4});
  for (int step = 0; step < 3; ++step) {
    m.skip = step != 1;  // the spare head takes part in the middle step only
    m.zero_grad();
    sum(ddp(x)).backward();  // completes: no parameter is left pending
    for (const Tensor& p : m.spare.parameters()) {
      REQUIRE(p.grad().defined());
      const float* gv = p.grad().data<float>();
      bool all_zero = true;
      for (std::int64_t i = 0; i < p.numel(); ++i) all_zero = all_zero && gv[i] == 0.0f;
      CHECK(all_zero == m.skip);
    }
  }
  // The output must be a Tensor for the tape walk.
  TwoOutputs pair;
  dist::DistributedDataParallel pair_ddp(pair, g.pg, {.find_unused_parameters = true});
  CHECK_THROWS_WITH(pair_ddp(x), Catch::Contains("find_unused_parameters needs a forward that returns a Tensor"));
}

TEST_CASE("ddp: under no_sync() gradients accumulate locally, and the next backward all-reduces their sum", "[ddp]") {
  dist::TCPStoreServer server;
  auto g = std::make_shared<CountingGroup>(std::make_shared<dist::TCPStore>("127.0.0.1", server.port(), 10s));
  manual_seed(3);
  TwoHeads a;
  manual_seed(3);
  TwoHeads b;
  a.skip = b.skip = false;
  dist::DistributedDataParallel ddp(a, g, {.bucket_cap_mb = 0.0001, .first_bucket_cap_mb = 0.0001});
  const int buckets = static_cast<int>(ddp.bucket_names().size());
  REQUIRE(buckets > 1);
  const std::vector<Tensor> x = {randn({5, 4}), randn({5, 4}), randn({5, 4})};
  const int before = g->allreduces;
  {
    auto no_sync = ddp.no_sync();
    {
      auto nested = ddp.no_sync();
      sum(ddp(x[0])).backward();
    }
    sum(ddp(x[1])).backward();  // the outer guard still holds
    CHECK(g->allreduces == before);
  }
  sum(ddp(x[2])).backward();
  CHECK(g->allreduces == before + buckets);

  for (const Tensor& xi : x) sum(b(xi)).backward();
  const auto pa = a.named_parameters(), pb = b.named_parameters();
  REQUIRE(pa.size() == pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    INFO(pa[i].first);
    const Tensor ga = pa[i].second.grad(), gb = pb[i].second.grad();
    REQUIRE(ga.defined());
    // One rank: the average is the sum itself, so the accumulated gradients come back unchanged.
    CHECK(std::memcmp(ga.raw_data(), gb.raw_data(), ga.nbytes()) == 0);
  }
}
