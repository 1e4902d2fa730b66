#include <algorithm>
#include <catch2/catch.hpp>
#include <set>
#include <tinynet/data/distributed_sampler.hpp>

using namespace tinynet::data;
using V = std::vector<std::int64_t>;

namespace {

std::vector<V> shares(std::int64_t n, int world, DistributedSamplerOptions o, std::int64_t epoch = 0) {
  std::vector<V> out;
  for (int r = 0; r < world; ++r) {
    DistributedSampler s(n, world, r, o);
    s.set_epoch(epoch);
    out.push_back(s.indices());
    CHECK(static_cast<std::int64_t>(out.back().size()) == s.size());
  }
  return out;
}

}  // namespace

// The expected lists are what torch.utils.data.distributed.DistributedSampler (1.13) gives.
TEST_CASE("DistributedSampler: strided shares padded by wrap-around, as in PyTorch", "[sampler]") {
  CHECK(shares(10, 3, {.shuffle = false}) == std::vector<V>{{0, 3, 6, 9}, {1, 4, 7, 0}, {2, 5, 8, 1}});
  CHECK(shares(10, 3, {.shuffle = false, .drop_last = true}) == std::vector<V>{{0, 3, 6}, {1, 4, 7}, {2, 5, 8}});
  CHECK(shares(2, 5, {.shuffle = false}) == std::vector<V>{{0}, {1}, {0}, {1}, {0}});
  CHECK(shares(0, 2, {.shuffle = false}) == std::vector<V>{{}, {}});
}

TEST_CASE("DistributedSampler: shuffled shares cover the data set, ceil(N/world) each", "[sampler]") {
  for (std::int64_t n : {1, 7, 100, 60000})
    for (int world : {1, 2, 3, 8}) {
      INFO("n " << n << " world " << world);
      const auto s = shares(n, world, {.shuffle = true, .seed = 5}, 2);
      std::set<std::int64_t> seen;
      for (const V& v : s) {
        CHECK(static_cast<std::int64_t>(v.size()) == (n + world - 1) / world);
        seen.insert(v.begin(), v.end());
      }
      CHECK(static_cast<std::int64_t>(seen.size()) == n);
      // Without padding (world divides n) the shares are disjoint.
      if (n % world == 0) {
        std::size_t total = 0;
        for (const V& v : s) total += v.size();
        CHECK(total == seen.size());
      }
    }
}

TEST_CASE("DistributedSampler: the order depends on seed and epoch only", "[sampler]") {
  const auto e0 = shares(1000, 4, {.seed = 3}, 0);
  CHECK(shares(1000, 4, {.seed = 3}, 0) == e0);  // same on every process computing it
  CHECK(shares(1000, 4, {.seed = 3}, 1) != e0);  // a new shuffle each epoch
  CHECK(shares(1000, 4, {.seed = 4}, 0) != e0);
  // Every rank's share is a slice of the one permutation RandomSampler gives for (seed, epoch).
  const V perm = RandomSampler::permutation(1000, 3, 0);
  for (int r = 0; r < 4; ++r)
    for (std::size_t i = 0; i < e0[static_cast<std::size_t>(r)].size(); ++i)
      CHECK(e0[static_cast<std::size_t>(r)][i] == perm[4 * i + static_cast<std::size_t>(r)]);
}

TEST_CASE("DistributedSampler: bad arguments are named", "[sampler]") {
  CHECK_THROWS_WITH(DistributedSampler(10, 0, 0), Catch::Contains("num_replicas must be positive"));
  CHECK_THROWS_WITH(DistributedSampler(10, 2, 2), Catch::Contains("rank 2 is not in [0, 2)"));
  CHECK_THROWS_WITH(DistributedSampler(-1, 2, 0), Catch::Contains("size must not be negative"));
}
