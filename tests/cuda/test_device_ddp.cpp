// DistributedDataParallel with the model on the device, as `mnist_cuda --backend nccl` runs
// it: buckets, the model check and rank 0's broadcast all on the device. The group is one
// rank that, like NcclGroup, refuses tensors that are not on the device, so these tests
// run wherever the device tests do (NCCL itself needs a GPU: dist.nccl-check).

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tinynet/dist/ddp.hpp>
#include <tinynet/optim/sgd.hpp>
#include <vector>

#include "device_testing.hpp"

using namespace tinynet;
using namespace tinynet::testing;

namespace {

// The keys DistributedDataParallel exchanges, in memory.
class MapStore : public dist::Store {
 public:
  MapStore() : Store(std::chrono::seconds(10)) {}
  using Store::get;
  using Store::wait;
  void set(const std::string& key, const std::string& value) override {
    std::lock_guard lock(mu_);
    map_[key] = value;
  }
  std::string get(const std::string& key, dist::Milliseconds) override {
    std::lock_guard lock(mu_);
    return map_.at(key);
  }
  std::int64_t add(const std::string& key, std::int64_t delta) override {
    std::lock_guard lock(mu_);
    const std::int64_t v = (map_.contains(key) ? std::stoll(map_[key]) : 0) + delta;
    map_[key] = std::to_string(v);
    return v;
  }
  void wait(const std::vector<std::string>&, dist::Milliseconds) override {}
  bool check(const std::vector<std::string>& keys) override {
    std::lock_guard lock(mu_);
    for (const auto& k : keys)
      if (!map_.contains(k)) return false;
    return true;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::string> map_;
};

// One rank on cuda:0: every collective of one rank leaves its tensor as it is (allgather
// copies), after checking it is on the device, as NcclGroup does.
class DeviceSoloGroup : public dist::ProcessGroup {
 public:
  DeviceSoloGroup() : ProcessGroup(0, 1, std::make_shared<MapStore>(), std::chrono::seconds(10)) {}
  const char* backend() const override { return "device-solo"; }
  void allreduce(Tensor& t, dist::ReduceOp, std::optional<dist::Milliseconds>) override {
    check_args("allreduce", t, kCuda);
    ++allreduces;
  }
  void broadcast(Tensor& t, int, std::optional<dist::Milliseconds>) override { check_args("broadcast", t, kCuda); }
  void allgather(const Tensor& in, Tensor& out, std::optional<dist::Milliseconds>) override {
    check_args("allgather", in, kCuda);
    check_args("allgather", out, kCuda);
    out.copy_(in);
  }
  void barrier(std::optional<dist::Milliseconds>) override {}

  std::atomic<int> allreduces{0};  // DDP all-reduces on its communication thread
};

using DdpNet = nn::Sequential<nn::Input<1, 8, 8>, nn::Conv2d<4, 3>, nn::ReLU, nn::Flatten, nn::Linear<16>, nn::ReLU,
                              nn::Linear<10>, nn::LogSoftmax>;

std::vector<std::int64_t> labels(std::int64_t n) {
  std::vector<std::int64_t> y;
  for (std::int64_t i = 0; i < n; ++i) y.push_back((i * 7 + 3) % 10);
  return y;
}

}  // namespace

TEST_CASE("DDP on the device trains like the model alone, and no_sync() defers the all-reduce", "[cuda][ddp]") {
  manual_seed(11);
  DdpNet alone;
  alone.to(kCuda);
  DdpNet wrapped;
  wrapped.load_state_dict(alone.state_dict());
  wrapped.to(kCuda);
  auto group = std::make_shared<DeviceSoloGroup>();
  dist::DistributedDataParallel ddp(wrapped, group, {.bucket_cap_mb = 0.001, .first_bucket_cap_mb = 0.001});
  const int buckets = static_cast<int>(ddp.bucket_names().size());
  REQUIRE(buckets > 1);

  optim::SGD opt(wrapped.parameters(), {.lr = 0.05, .momentum = 0.9});
  optim::SGD opt_alone(alone.parameters(), {.lr = 0.05, .momentum = 0.9});
  const Tensor x = randn({12, 1, 8, 8}).to(kCuda);
  const Tensor y = from_vector<std::int64_t>(labels(12), {12}).to(kCuda);
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    const int before = group->allreduces;
    {
      auto no_sync = ddp.no_sync();
      nll_loss(ddp(x), y).backward();
    }
    CHECK(group->allreduces == before);
    nll_loss(ddp(x), y).backward();
    CHECK(group->allreduces == before + buckets);
    opt.step();

    opt_alone.zero_grad();
    nll_loss(alone(x), y).backward();
    nll_loss(alone(x), y).backward();
    opt_alone.step();
  }
  const auto a = wrapped.named_parameters(), b = alone.named_parameters();
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].first);
    CHECK(a[i].second.device() == kCuda);
    // Copied into the device buckets and back: the values must be the same bits.
    const Tensor pa = host(a[i].second), pb = host(b[i].second);
    CHECK(std::memcmp(pa.raw_data(), pb.raw_data(), pa.nbytes()) == 0);
  }
}

TEST_CASE("DDP of a model left on the CPU over a device-only group fails with the group's message", "[cuda][ddp]") {
  DdpNet cpu_model;
  auto group = std::make_shared<DeviceSoloGroup>();
  CHECK_THROWS_WITH((dist::DistributedDataParallel<DdpNet>(cpu_model, group)),
                    Catch::Contains("device-solo allgather: tensor is on cpu, this backend needs cuda tensors"));
}
