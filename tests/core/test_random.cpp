#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <tinynet/tinynet.hpp>
#include <vector>

#include "thread_count_restorer.hpp"

using namespace tinynet;
using tinynet::testing::ThreadCountRestorer;

namespace {

std::vector<double> values(const Tensor& t) {
  return dispatch_floating(t.dtype(), "values", [&]<typename T>() {
    const T* p = t.data<T>();
    return std::vector<double>(p, p + t.numel());
  });
}

struct Moments {
  double mean = 0, var = 0, min = 0, max = 0;
};

Moments moments(const std::vector<double>& v) {
  Moments m{0, 0, v.front(), v.front()};
  for (double x : v) {
    m.mean += x;
    m.min = std::min(m.min, x);
    m.max = std::max(m.max, x);
  }
  m.mean /= static_cast<double>(v.size());
  for (double x : v) m.var += (x - m.mean) * (x - m.mean);
  m.var /= static_cast<double>(v.size() - 1);
  return m;
}

constexpr std::int64_t kSamples = 1000000;

}  // namespace

TEST_CASE("random: the same seed gives the same numbers, another seed others", "[random]") {
  for (DType t : {DType::float32, DType::float64}) {
    INFO(t);
    Generator a(42), b(42), c(43);
    const auto ua = values(rand({1000}, {.dtype = t}, a));
    CHECK(ua == values(rand({1000}, {.dtype = t}, b)));
    CHECK(ua != values(rand({1000}, {.dtype = t}, c)));
    const auto na = values(randn({1001}, {.dtype = t}, a));
    CHECK(na == values(randn({1001}, {.dtype = t}, b)));
    CHECK(na != values(randn({1001}, {.dtype = t}, c)));
    // Each draw advances the generator: the next tensor is a new one.
    CHECK(values(rand({1000}, {.dtype = t}, a)) != ua);
  }
  manual_seed(7);
  const auto d1 = values(randn({10}));
  manual_seed(7);
  CHECK(d1 == values(randn({10})));
}

TEST_CASE("random: rand is uniform, 0 <= u < 1", "[random]") {
  for (DType t : {DType::float32, DType::float64}) {
    INFO(t);
    Generator gen(1);
    const Moments m = moments(values(rand({kSamples}, {.dtype = t}, gen)));
    // Bounds: five standard errors. U(0,1) has variance 1/12 and E[(u-1/2)^4] = 1/80.
    const double n = static_cast<double>(kSamples);
    CHECK(std::abs(m.mean - 0.5) <= 5 * std::sqrt(1.0 / 12.0 / n));
    CHECK(std::abs(m.var - 1.0 / 12.0) <= 5 * std::sqrt((1.0 / 80.0 - 1.0 / 144.0) / n));
    CHECK(m.min >= 0.0);
    CHECK(m.max < 1.0);
  }
}

TEST_CASE("random: float32 rand never rounds up to 1", "[random]") {
  // Counter 11031643 under seed 0 yields the 32-bit word 0xffffffcc in lane 3: as a double
  // it is 1 - 1.2e-8, which rounds to exactly 1.0f.
  Generator gen;
  gen.set_state(0, 11031643);
  const auto v = values(rand({4}, {.dtype = DType::float32}, gen));
  CHECK(v[3] < 1.0);
  CHECK(v[3] > 0.9999999);
}

TEST_CASE("random: uniform stays in low <= u < high and rejects low > high", "[random]") {
  Generator gen(2);
  const Moments m = moments(values(uniform({kSamples}, -3.0, 5.0, {.dtype = DType::float64}, gen)));
  CHECK(m.min >= -3.0);
  CHECK(m.max < 5.0);
  CHECK(std::abs(m.mean - 1.0) <= 5 * 8.0 * std::sqrt(1.0 / 12.0 / static_cast<double>(kSamples)));
  CHECK_THROWS_AS(uniform({3}, 1.0, 0.0), ValueError);
  CHECK_THROWS_WITH(uniform({3}, 1.0, 0.0), Catch::Contains("low (1) must not exceed high (0)"));
  CHECK_THROWS_AS(rand({3}, {.dtype = DType::int64}), TypeError);
  CHECK_THROWS_WITH(randn({3}, {.dtype = DType::int32}),
                    Catch::Contains("float32 or float64") && Catch::Contains("int32"));
}

TEST_CASE("random: randn has mean 0 and standard deviation 1", "[random]") {
  for (DType t : {DType::float32, DType::float64}) {
    INFO(t);
    Generator gen(3);
    const auto v = values(randn({kSamples}, {.dtype = t}, gen));
    const Moments m = moments(v);
    const double n = static_cast<double>(kSamples);
    // Standard errors: of the mean 1/sqrt(n), of the standard deviation 1/sqrt(2n).
    CHECK(std::abs(m.mean) <= 5 / std::sqrt(n));
    CHECK(std::abs(std::sqrt(m.var) - 1.0) <= 5 / std::sqrt(2 * n));
    // Tails: P(|z| > 1.96) = 0.05.
    double tail = 0;
    for (double x : v) tail += std::abs(x) > 1.959964 ? 1 : 0;
    CHECK(std::abs(tail / n - 0.05) <= 5 * std::sqrt(0.05 * 0.95 / n));
    CHECK(std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); }));
  }
}

TEST_CASE("random: results do not depend on the thread count", "[random]") {
  ThreadCountRestorer restore;
  std::vector<std::vector<double>> runs;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    Generator gen(4);
    runs.push_back(values(rand({100000}, {.dtype = DType::float32}, gen)));
    runs.push_back(values(randn({100000}, {.dtype = DType::float64}, gen)));
    runs.push_back(values(dropout(ones({100000}), 0.3, true, gen)));
  }
  CHECK(runs[0] == runs[3]);
  CHECK(runs[1] == runs[4]);
  CHECK(runs[2] == runs[5]);
}

TEST_CASE("random: generator state (seed, offset) round-trips the stream", "[random]") {
  Generator gen(5);
  (void)randn({37}, {}, gen);
  const std::uint64_t seed = gen.seed(), offset = gen.offset();
  CHECK(seed == 5);
  CHECK(offset > 0);
  const auto next_u = values(rand({100}, {.dtype = DType::float64}, gen));
  const auto next_n = values(randn({99}, {}, gen));

  Generator restored;
  restored.set_state(seed, offset);
  CHECK(values(rand({100}, {.dtype = DType::float64}, restored)) == next_u);
  CHECK(values(randn({99}, {}, restored)) == next_n);
  CHECK(restored.offset() == gen.offset());

  // manual_seed starts the stream over.
  Generator fresh(5);
  const auto first = values(randn({37}, {}, fresh));
  gen.manual_seed(5);
  CHECK(gen.offset() == 0);
  CHECK(values(randn({37}, {}, gen)) == first);
}
