#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>
#include <set>
#include <tinynet/core/threading.hpp>
#include <tinynet/data/sampler.hpp>

using namespace tinynet::data;

namespace {

bool is_permutation_of_range(std::vector<std::int64_t> v, std::int64_t n) {
  if (static_cast<std::int64_t>(v.size()) != n) return false;
  std::sort(v.begin(), v.end());
  for (std::int64_t i = 0; i < n; ++i)
    if (v[static_cast<std::size_t>(i)] != i) return false;
  return true;
}

}  // namespace

TEST_CASE("sampler: SequentialSampler yields 0..n-1 every epoch", "[sampler]") {
  SequentialSampler s(5);
  CHECK(s.size() == 5);
  CHECK(s.indices() == std::vector<std::int64_t>{0, 1, 2, 3, 4});
  s.set_epoch(3);
  CHECK(s.epoch() == 3);
  CHECK(s.indices() == std::vector<std::int64_t>{0, 1, 2, 3, 4});
  CHECK(SequentialSampler(0).indices().empty());
  CHECK_THROWS_AS(SequentialSampler(-1), tinynet::ValueError);
}

TEST_CASE("sampler: RandomSampler visits every index exactly once per epoch", "[sampler]") {
  for (std::int64_t n : {0, 1, 2, 7, 1000, 60000}) {
    RandomSampler s(n, 42);
    for (std::int64_t e = 0; e < 3; ++e) {
      s.set_epoch(e);
      INFO("n " << n << " epoch " << e);
      CHECK(is_permutation_of_range(s.indices(), n));
    }
  }
}

TEST_CASE("sampler: RandomSampler's order is a function of seed and epoch", "[sampler]") {
  RandomSampler a(1000, 7), b(1000, 7), other_seed(1000, 8);
  CHECK(a.indices() == b.indices());
  CHECK(a.indices() != other_seed.indices());

  std::set<std::vector<std::int64_t>> orders;
  for (std::int64_t e = 0; e < 10; ++e) {
    a.set_epoch(e);
    orders.insert(a.indices());
  }
  CHECK(orders.size() == 10);  // a new order every epoch

  // Any epoch can be recomputed alone, in any order, under any thread count (resume).
  a.set_epoch(5);
  const auto fifth = a.indices();
  const int threads = tinynet::get_num_threads();
  tinynet::set_num_threads(1);
  b.set_epoch(5);
  CHECK(b.indices() == fifth);
  tinynet::set_num_threads(threads);
  CHECK(RandomSampler::permutation(1000, 7, 5) == fifth);

  // Pinned: a change here changes every shuffled training run's batches.
  CHECK(RandomSampler::permutation(10, 1, 0) == std::vector<std::int64_t>{1, 7, 2, 9, 6, 5, 3, 4, 8, 0});
}

TEST_CASE("sampler: RandomSampler spreads each index evenly over positions", "[sampler]") {
  // Where index 0 lands over 5000 epochs of n = 10: 500 per position expected.
  std::vector<int> where(10, 0);
  for (std::int64_t e = 0; e < 5000; ++e) {
    const auto p = RandomSampler::permutation(10, 3, e);
    ++where[static_cast<std::size_t>(std::find(p.begin(), p.end(), 0) - p.begin())];
  }
  double chi2 = 0;
  for (int c : where) chi2 += (c - 500.0) * (c - 500.0) / 500.0;
  CHECK(chi2 < 27.9);  // chi-square, 9 degrees of freedom, p = 0.001
}
