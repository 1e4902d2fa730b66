#include <catch2/catch.hpp>
#include <cmath>
#include <tinynet/tinynet.hpp>
#include <vector>

#include "ops/op_testing.hpp"
#include "thread_count_restorer.hpp"

using namespace tinynet;
using namespace tinynet::testing;

TEST_CASE("dropout: eval mode and p = 0 return the input itself", "[ops][dropout]") {
  const Tensor x = random_input({4, 5}, 1);
  CHECK(dropout(x, 0.5, false).is_same(x));
  CHECK(dropout(x, 0.0, true).is_same(x));
  const Tensor img = random_input({2, 3, 4, 4}, 3);
  CHECK(dropout2d(img, 0.3, false).is_same(img));
}

TEST_CASE("dropout: keep rate is 1 - p and kept values are scaled by 1 / (1 - p)", "[ops][dropout]") {
  constexpr std::int64_t n = 1000000;
  const Tensor x = random_input({1000, 1000}, 4, false, 0.5, 1.5);  // no zeros in the input
  const auto vx = values(x);
  for (double p : {0.1, 0.5, 0.75}) {
    INFO("p = " << p);
    Generator gen(5);
    const auto vy = values(dropout(x, p, true, gen));
    std::int64_t kept = 0;
    for (std::size_t i = 0; i < vy.size(); ++i) {
      if (vy[i] == 0.0) continue;
      ++kept;
      // The mask holds 1/(1-p) rounded once, so this is exact up to one more rounding.
      if (std::abs(vy[i] - vx[i] / (1.0 - p)) > 1e-15 * std::abs(vy[i])) FAIL("element " << i << " scaled wrongly");
    }
    const double rate = static_cast<double>(kept) / static_cast<double>(n);
    CHECK(std::abs(rate - (1.0 - p)) <= 0.01 * (1.0 - p));
  }
}

TEST_CASE("dropout: p = 1 drops everything and passes no gradient", "[ops][dropout]") {
  const Tensor x = random_input({3, 4}, 6);
  const Tensor y = dropout(x, 1.0, true);
  for (double v : values(y)) CHECK(v == 0.0);
  sum(y).backward();
  for (double g : values(x.grad())) CHECK(g == 0.0);
}

TEST_CASE("dropout: the same seed gives the same mask, another seed another", "[ops][dropout]") {
  const Tensor x = ones({64, 64});
  Generator a(7), b(7), c(8);
  const auto ya = values(dropout(x, 0.5, true, a));
  CHECK(ya == values(dropout(x, 0.5, true, b)));
  CHECK(ya != values(dropout(x, 0.5, true, c)));
  // The generator advanced: the next mask from it is a new one.
  CHECK(ya != values(dropout(x, 0.5, true, a)));
  // manual_seed makes the default generator reproducible.
  manual_seed(99);
  const auto d1 = values(dropout(x, 0.5));
  manual_seed(99);
  CHECK(d1 == values(dropout(x, 0.5)));
}

TEST_CASE("dropout: the mask does not depend on the thread count", "[ops][dropout]") {
  ThreadCountRestorer restore;
  const Tensor x = ones({300000});  // several parallel chunks
  std::vector<std::vector<double>> masks;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    Generator gen(11);
    masks.push_back(values(dropout(x, 0.4, true, gen)));
    Generator gen2(11);
    masks.push_back(values(dropout2d(ones({128, 512, 2, 2}), 0.4, true, gen2)));
  }
  CHECK(masks[0] == masks[2]);
  CHECK(masks[1] == masks[3]);
}

TEST_CASE("dropout: float32 and float64 masks are the stream's draws compared with p", "[ops][dropout]") {
  // float32 masks come from a vectorised Philox (16 counters at a time) on AVX-512 machines;
  // both must equal the scalar definition: unit u kept iff uniform(u) >= p. Sizes end
  // inside and on 16-counter groups; two threads start chunks at other offsets.
  ThreadCountRestorer restore;
  for (int threads : {1, 2})
    for (std::int64_t n : {std::int64_t{1}, std::int64_t{63}, std::int64_t{64}, std::int64_t{65}, std::int64_t{200003}})
      for (DType dt : {DType::float32, DType::float64})
        for (double p : {0.25, 0.5, 0.9}) {
          INFO(threads << " threads, " << n << " elements, " << dt << ", p = " << p);
          set_num_threads(threads);
          Generator gen(21), same(21);
          const auto mask = values(dropout(ones({n}, TensorOptions{.dtype = dt}), p, true, gen));
          const RandomStream rs = same.reserve(static_cast<std::uint64_t>(n));
          const double scale =
              dt == DType::float32 ? static_cast<double>(static_cast<float>(1.0 / (1.0 - p))) : 1.0 / (1.0 - p);
          std::int64_t wrong = 0;
          for (std::int64_t u = 0; u < n; ++u) {
            const bool keep = rs.uniform<double>(static_cast<std::uint64_t>(u)) >= p;
            wrong += mask[static_cast<std::size_t>(u)] != (keep ? scale : 0.0);
          }
          CHECK(wrong == 0);
        }
}

TEST_CASE("dropout2d: zeroes whole channels", "[ops][dropout]") {
  for (const Shape& s : {Shape{4, 8, 5, 5}, Shape{6, 5, 7}}) {
    INFO(s);
    const double p = 0.5;
    Generator gen(12);
    const Tensor y = dropout2d(ones(s, {.dtype = DType::float64}), p, true, gen);
    const auto v = values(y);
    const std::int64_t planes = s[0] * s[1], inner = y.numel() / planes;
    std::int64_t dropped = 0;
    for (std::int64_t pl = 0; pl < planes; ++pl) {
      const double first = v[static_cast<std::size_t>(pl * inner)];
      CHECK((first == 0.0 || first == 1.0 / (1.0 - p)));
      for (std::int64_t i = 1; i < inner; ++i)
        if (v[static_cast<std::size_t>(pl * inner + i)] != first) FAIL("plane " << pl << " is only partly dropped");
      if (first == 0.0) ++dropped;
    }
    CHECK(dropped > 0);
    CHECK(dropped < planes);
  }
}

TEST_CASE("dropout: gradients match finite differences under a fixed mask", "[ops][dropout][gradcheck]") {
  for (const Shape& s : {Shape{1, 7}, Shape{3, 4, 5}}) {
    INFO(s);
    // A fresh generator per call: every finite-difference evaluation sees the same mask.
    check_gradients(
        [](std::span<const Tensor> in) {
          Generator gen(13);
          return dropout(in[0], 0.3, true, gen);
        },
        {random_input(s, 14)});
  }
  for (const Shape& s : {Shape{1, 3, 4, 5}, Shape{2, 5, 3, 3}, Shape{2, 3, 6}}) {
    INFO(s);
    check_gradients(
        [](std::span<const Tensor> in) {
          Generator gen(15);
          return dropout2d(in[0], 0.4, true, gen);
        },
        {random_input(s, 16)});
  }
}

TEST_CASE("dropout: the gradient is the mask", "[ops][dropout]") {
  const Tensor x = random_input({10, 10}, 17);
  Generator gen(18);
  const Tensor y = dropout(x, 0.25, true, gen);
  sum(y).backward();
  const auto vy = values(y), g = values(x.grad());
  for (std::size_t i = 0; i < g.size(); ++i) CHECK(g[i] == (vy[i] == 0.0 ? 0.0 : 1.0 / 0.75));
}

TEST_CASE("dropout: misuse throws errors that name the problem", "[ops][dropout][errors]") {
  const Tensor x = zeros({4, 4});
  CHECK_THROWS_AS(dropout(x, -0.1), ValueError);
  CHECK_THROWS_WITH(dropout(x, -0.1), Catch::Contains("dropout") && Catch::Contains("probability must be in [0, 1]"));
  CHECK_THROWS_AS(dropout(x, 1.5), ValueError);
  CHECK_THROWS_AS(dropout2d(zeros({2, 3, 4, 4}), 2.0), ValueError);
  CHECK_THROWS_WITH(dropout2d(zeros({2, 3, 4, 4}), 2.0), Catch::Contains("dropout2d"));
  CHECK_THROWS_AS(dropout2d(x, 0.5), ShapeError);
  CHECK_THROWS_WITH(dropout2d(x, 0.5),
                    Catch::Contains("dropout2d") && Catch::Contains("rank 3 or 4") && Catch::Contains("[4, 4]"));
  CHECK_THROWS_AS(dropout2d(zeros({1, 2, 3, 4, 5}), 0.5), ShapeError);
  CHECK_THROWS_AS(dropout(zeros({4}, {.dtype = DType::int64}), 0.5), TypeError);
  CHECK_THROWS_WITH(dropout(zeros({4}, {.dtype = DType::int64}), 0.5), Catch::Contains("int64"));
}
