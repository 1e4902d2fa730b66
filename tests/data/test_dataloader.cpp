#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <iterator>
#include <limits>
#include <set>
#include <thread>
#include <tinynet/core/allocator.hpp>
#include <tinynet/core/threading.hpp>
#include <tinynet/data/dataloader.hpp>
#include <tinynet/data/mnist.hpp>

#include "data/helpers.hpp"

using namespace tinynet;
using namespace tinynet::data;

namespace {

// n samples; sample i has data row [i, i + 0.5, -i] and target i.
TensorDataset counting_dataset(std::int64_t n) {
  Tensor data(Shape{n, 3}, {DType::float32, Device::cpu(), false});
  Tensor targets(Shape{n}, {DType::int64, Device::cpu(), false});
  for (std::int64_t i = 0; i < n; ++i) {
    data.data<float>()[3 * i] = static_cast<float>(i);
    data.data<float>()[3 * i + 1] = static_cast<float>(i) + 0.5f;
    data.data<float>()[3 * i + 2] = -static_cast<float>(i);
    targets.data<std::int64_t>()[i] = i;
  }
  return TensorDataset(data, targets);
}

// The targets of every batch of one pass.
template <typename Loader>
std::vector<std::vector<std::int64_t>> one_epoch(Loader& loader) {
  std::vector<std::vector<std::int64_t>> out;
  for (auto& batch : loader) {
    const std::int64_t* t = batch.target.template data<std::int64_t>();
    out.emplace_back(t, t + batch.target.numel());
  }
  return out;
}

std::vector<std::int64_t> flat(const std::vector<std::vector<std::int64_t>>& batches) {
  std::vector<std::int64_t> out;
  for (const auto& b : batches) out.insert(out.end(), b.begin(), b.end());
  return out;
}

// Indices in reverse: a user-defined sampler.
class ReverseSampler : public Sampler {
 public:
  explicit ReverseSampler(std::int64_t n) : n_(n) {}
  std::vector<std::int64_t> indices() const override {
    std::vector<std::int64_t> v(static_cast<std::size_t>(n_));
    for (std::int64_t i = 0; i < n_; ++i) v[static_cast<std::size_t>(i)] = n_ - 1 - i;
    return v;
  }
  std::int64_t size() const override { return n_; }

 private:
  std::int64_t n_;
};

// A data set whose get_batch fails on the batch holding sample `poison`.
struct FailingDataset {
  TensorDataset inner;
  std::int64_t poison;
  std::int64_t size() const { return inner.size(); }
  Batch get_batch(std::span<const std::int64_t> idx) const {
    for (auto i : idx) TINYNET_CHECK(ValueError, i != poison, "sample ", i, " is unreadable");
    return inner.get_batch(idx);
  }
};

// Counts get_batch calls, so a test can watch the background gather start.
struct CountingDataset {
  TensorDataset inner;
  std::shared_ptr<std::atomic<int>> calls = std::make_shared<std::atomic<int>>(0);
  std::int64_t size() const { return inner.size(); }
  Batch get_batch(std::span<const std::int64_t> idx) const {
    ++*calls;
    return inner.get_batch(idx);
  }
};

static_assert(std::input_iterator<DataLoader<TensorDataset>::Iterator>);
static_assert(std::sentinel_for<std::default_sentinel_t, DataLoader<TensorDataset>::Iterator>);

}  // namespace

TEST_CASE("dataloader: batches hold the data set's rows in sampler order, last batch partial", "[dataloader]") {
  const TensorDataset ds = counting_dataset(10);
  DataLoader loader(ds, {.batch_size = 4});
  CHECK(loader.size() == 3);
  std::vector<std::int64_t> sizes;
  std::int64_t next = 0;
  for (auto& batch : loader) {
    const std::int64_t b = batch.data.size(0);
    sizes.push_back(b);
    CHECK(batch.data.shape() == Shape{b, 3});
    CHECK(batch.target.shape() == Shape{b});
    CHECK(batch.data.dtype() == DType::float32);
    CHECK(batch.target.dtype() == DType::int64);
    for (std::int64_t r = 0; r < b; ++r, ++next) {
      CHECK(batch.target.data<std::int64_t>()[r] == next);
      CHECK(batch.data.at<float>({r, 0}) == static_cast<float>(next));
      CHECK(batch.data.at<float>({r, 1}) == static_cast<float>(next) + 0.5f);
      CHECK(batch.data.at<float>({r, 2}) == -static_cast<float>(next));
    }
  }
  CHECK(sizes == std::vector<std::int64_t>{4, 4, 2});
}

TEST_CASE("dataloader: drop_last and batch counts", "[dataloader]") {
  const TensorDataset ds = counting_dataset(10);
  const auto count = [&](std::int64_t b, bool drop) {
    DataLoader loader(ds, {.batch_size = b, .drop_last = drop});
    const auto batches = one_epoch(loader);
    CHECK(static_cast<std::int64_t>(batches.size()) == loader.size());
    for (const auto& v : batches) CHECK(static_cast<std::int64_t>(v.size()) <= b);
    return loader.size();
  };
  CHECK(count(4, false) == 3);
  CHECK(count(4, true) == 2);
  CHECK(count(5, true) == 2);
  CHECK(count(10, false) == 1);
  CHECK(count(11, false) == 1);
  CHECK(count(11, true) == 0);
  CHECK(count(1, true) == 10);
  // The count does not overflow for the largest batch size: one batch of everything.
  CHECK(count(std::numeric_limits<std::int64_t>::max(), false) == 1);
  CHECK(count(std::numeric_limits<std::int64_t>::max(), true) == 0);
  CHECK(count(std::numeric_limits<std::int64_t>::max() / 2 + 1, false) == 1);

  DataLoader drop(ds, {.batch_size = 4, .shuffle = true, .seed = 3, .drop_last = true});
  for (const auto& b : one_epoch(drop)) CHECK(b.size() == 4);
}

TEST_CASE("dataloader: shuffle visits each sample once per epoch, a new order each epoch, reproducibly",
          "[dataloader]") {
  const TensorDataset ds = counting_dataset(103);
  const DataLoaderOptions opts{.batch_size = 8, .shuffle = true, .seed = 1};
  DataLoader a(ds, opts), b(ds, opts);
  std::set<std::vector<std::int64_t>> orders;
  for (int epoch = 0; epoch < 4; ++epoch) {
    const auto order = flat(one_epoch(a));
    auto sorted = order;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::int64_t> all(103);
    for (std::int64_t i = 0; i < 103; ++i) all[static_cast<std::size_t>(i)] = i;
    CHECK(sorted == all);
    CHECK(flat(one_epoch(b)) == order);  // same seed, same epochs: same order
    orders.insert(order);
  }
  CHECK(orders.size() == 4);
  CHECK(a.epoch() == 4);

  // set_epoch replays an epoch (a resumed run); the order is the sampler's for that epoch.
  a.set_epoch(2);
  const auto replay = flat(one_epoch(a));
  CHECK(replay == RandomSampler::permutation(103, 1, 2));
  CHECK(a.epoch() == 3);
}

TEST_CASE("dataloader: prefetching gives the same batches as not prefetching", "[dataloader]") {
  const TensorDataset ds = counting_dataset(1000);
  DataLoaderOptions opts{.batch_size = 64, .shuffle = true, .seed = 9};
  DataLoader with(ds, opts);
  opts.prefetch = false;
  DataLoader without(ds, opts);
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::vector<Batch> x, y;
    for (auto& batch : with) x.push_back(batch);
    for (auto& batch : without) y.push_back(batch);
    REQUIRE(x.size() == y.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      REQUIRE(x[i].data.shape() == y[i].data.shape());
      CHECK(std::memcmp(x[i].data.raw_data(), y[i].data.raw_data(), x[i].data.nbytes()) == 0);
      CHECK(std::memcmp(x[i].target.raw_data(), y[i].target.raw_data(), x[i].target.nbytes()) == 0);
    }
  }
  // And on a single thread, where the prefetch task can only run when waited for.
  const int threads = get_num_threads();
  set_num_threads(1);
  opts.prefetch = true;
  DataLoader single(ds, opts);
  opts.prefetch = false;
  DataLoader reference(ds, opts);
  CHECK(one_epoch(single) == one_epoch(reference));
  set_num_threads(threads);
}

TEST_CASE("dataloader: the next batch is gathered while the loop body runs", "[dataloader]") {
  if (get_num_threads() < 2) {
    WARN("one thread: the prefetch task can only run when waited for; overlap not checked");
    return;
  }
  CountingDataset ds{counting_dataset(40)};
  DataLoader loader(ds, {.batch_size = 10});
  int batch = 0;
  for (auto& b : loader) {
    CHECK(b.data.size(0) == 10);
    // Without touching the loader, wait (at most 10 s) for the gather of the following batch.
    const int want = std::min(batch + 2, 4);
    for (int i = 0; i < 10000 && ds.calls->load() < want; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    CHECK(ds.calls->load() == want);
    ++batch;
  }
  CHECK(batch == 4);
}

TEST_CASE("dataloader: an epoch after the first allocates nothing from the system", "[dataloader][memory]") {
  const TensorDataset ds = counting_dataset(1000);
  DataLoader loader(ds, {.batch_size = 64, .shuffle = true, .seed = 2});
  one_epoch(loader);
  const auto before = cpu_allocator().stats();
  for (int epoch = 0; epoch < 3; ++epoch)
    for (auto& batch : loader) CHECK(batch.data.numel() > 0);
  const auto after = cpu_allocator().stats();
  CHECK(after.system_allocs == before.system_allocs);
  CHECK(after.requests - before.requests == 3 * 16 * 2);  // data and target per batch, all served from the cache
}

TEST_CASE("dataloader: samplers, early exits and errors", "[dataloader]") {
  const TensorDataset ds = counting_dataset(10);

  SECTION("a user sampler sets the order") {
    DataLoader loader(ds, std::make_unique<ReverseSampler>(10), {.batch_size = 3});
    CHECK(flat(one_epoch(loader)) == std::vector<std::int64_t>{9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  }
  SECTION("misuse is a ValueError") {
    CHECK_THROWS_AS(DataLoader(ds, {.batch_size = 0}), ValueError);
    CHECK_THROWS_WITH(
        DataLoader(ds, std::make_unique<ReverseSampler>(10), {.batch_size = 2, .shuffle = true, .seed = 0}),
        Catch::Contains("not both"));
  }
  SECTION("leaving a pass early and starting the next is safe") {
    DataLoader loader(ds, {.batch_size = 2});
    for (auto& batch : loader) {
      CHECK(batch.target.data<std::int64_t>()[0] == 0);
      break;  // the prefetched second batch is abandoned
    }
    CHECK(flat(one_epoch(loader)) == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  }
  SECTION("an error gathering a prefetched batch reaches the loop") {
    DataLoader loader(FailingDataset{ds, 7}, {.batch_size = 2});
    std::int64_t seen = 0;
    CHECK_THROWS_WITH(
        [&] {
          for (auto& batch : loader) seen += batch.target.numel();
        }(),
        Catch::Contains("sample 7 is unreadable"));
    CHECK(seen == 6);
  }
  SECTION("an index outside the data set is an IndexError") {
    CHECK_THROWS_AS(ds.get_batch(std::vector<std::int64_t>{3, 10}), IndexError);
  }
}

TEST_CASE("dataloader: MNIST batches are [B,1,28,28] float32 and [B] int64 equal to the data set's rows",
          "[dataloader][real]") {
  const MNIST& train = test_data::mnist(true);
  DataLoader loader(train, {.batch_size = 64, .shuffle = true, .seed = 1});
  CHECK(loader.size() == 938);
  const auto order = RandomSampler::permutation(60000, 1, 0);
  const Tensor images = train.data();
  std::int64_t k = 0, batches = 0;
  for (auto& batch : loader) {
    const std::int64_t b = batch.data.size(0);
    CHECK(batch.data.shape() == Shape{b, 1, 28, 28});
    CHECK(batch.target.shape() == Shape{b});
    if (batches % 100 == 0 || b != 64) {  // spot-check rows against the data set
      for (std::int64_t r = 0; r < b; ++r) {
        const std::int64_t i = order[static_cast<std::size_t>(k + r)];
        CHECK(std::memcmp(batch.data.data<float>() + r * 784, images.data<float>() + i * 784, 784 * 4) == 0);
        CHECK(batch.target.data<std::int64_t>()[r] == train.targets().data<std::int64_t>()[i]);
      }
    }
    k += b;
    ++batches;
  }
  CHECK(batches == 938);
  CHECK(k == 60000);

  DataLoader test(test_data::mnist(false), {.batch_size = 1000});
  CHECK(test.size() == 10);
}
