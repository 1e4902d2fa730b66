// clamp, abs, sqrt, maximum and minimum: forward against naive loops, gradients by finite
// differences away from the kinks and PyTorch's gradient at them, accumulation, misuse.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <tinynet/tinynet.hpp>
#include <vector>

#include "ops/op_testing.hpp"

using namespace tinynet;
using namespace tinynet::testing;

namespace {

/// `x`'s values with f applied to each.
template <typename F>
std::vector<double> mapped(const Tensor& x, F f) {
  std::vector<double> r;
  for (double v : all_values(x)) r.push_back(f(v));
  return r;
}

/// Values in [-1, 1) at least 0.05 away from each of `kinks` (where a derivative jumps).
Tensor away_from(const Shape& s, std::uint64_t seed, std::vector<double> kinks) {
  Tensor t = random_input(s, seed, false);
  for (std::int64_t i = 0; i < t.numel(); ++i)
    for (double k : kinks)
      if (std::abs(t.data<double>()[i] - k) < 0.05) t.data<double>()[i] = k + 0.05;
  return t.requires_grad_();
}

}  // namespace

TEST_CASE("clamp, abs, sqrt: values match std", "[ops][minmax]") {
  const Tensor x = random_input({4, 5}, 1, false, -2.0, 2.0);
  CHECK(all_values(clamp(x, -0.5, 0.75)) == mapped(x, [](double v) { return std::min(std::max(v, -0.5), 0.75); }));
  CHECK(all_values(clamp(x, 0.25, std::nullopt)) == mapped(x, [](double v) { return std::max(v, 0.25); }));
  CHECK(all_values(clamp(x, std::nullopt, -0.25)) == mapped(x, [](double v) { return std::min(v, -0.25); }));
  CHECK(all_values(clamp_min(x, 0.0)) == mapped(x, [](double v) { return std::max(v, 0.0); }));
  CHECK(all_values(clamp_max(x, 0.0)) == mapped(x, [](double v) { return std::min(v, 0.0); }));
  // min > max gives max everywhere, as PyTorch (min(max(x, lo), hi)).
  CHECK(all_values(clamp(x, 1.0, -1.0)) == std::vector<double>(20, -1.0));
  CHECK(all_values(abs(x)) == mapped(x, [](double v) { return std::fabs(v); }));
  const Tensor pos = random_input({4, 5}, 2, false, 0.0, 4.0);
  CHECK(all_values(tinynet::sqrt(pos)) == mapped(pos, [](double v) { return std::sqrt(v); }));
  const Tensor x32 = x.to(DType::float32);
  check_close(clamp(x32, -0.5, 0.75), mapped(x32, [](double v) { return std::min(std::max(v, -0.5), 0.75); }), 1e-7);
  check_close(tinynet::sqrt(pos.to(DType::float32)), mapped(pos, [](double v) { return std::sqrt(v); }), 1e-7);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(std::isnan(clamp(full({1}, nan, {.dtype = DType::float64}), 0.0, 1.0).item()));
}

TEST_CASE("maximum, minimum: values match std, broadcasting, NaN wins", "[ops][minmax]") {
  const Tensor a = random_input({3, 4}, 3, false), row = random_input({4}, 4, false);
  const Tensor mx = maximum(a, row), mn = minimum(a, row);
  CHECK(mx.shape() == Shape{3, 4});
  const auto va = all_values(a), vr = all_values(row), vmx = all_values(mx), vmn = all_values(mn);
  for (std::size_t i = 0; i < va.size(); ++i) {
    CHECK(vmx[i] == std::max(va[i], vr[i % 4]));
    CHECK(vmn[i] == std::min(va[i], vr[i % 4]));
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor p = from_vector<double>({nan, 1.0, 2.0}, {3}), q = from_vector<double>({0.0, nan, 1.0}, {3});
  for (const Tensor& r : {maximum(p, q), minimum(p, q), maximum(q, p), minimum(q, p)}) {
    CHECK(std::isnan(r.data<double>()[0]));
    CHECK(std::isnan(r.data<double>()[1]));
  }
  CHECK(maximum(p, q).data<double>()[2] == 2.0);
  CHECK(minimum(p, q).data<double>()[2] == 1.0);
}

TEST_CASE("clamp, abs, sqrt, maximum, minimum: gradients match finite differences and accumulate",
          "[ops][minmax][gradcheck]") {
  for (const Shape& s : {Shape{7}, Shape{3, 4}, Shape{2, 3, 2}}) {
    INFO(s);
    check_gradients([](std::span<const Tensor> in) { return clamp(in[0], -0.5, 0.5); }, {away_from(s, 1, {-0.5, 0.5})});
    check_gradients([](std::span<const Tensor> in) { return clamp_min(in[0], 0.1); }, {away_from(s, 2, {0.1})});
    check_gradients([](std::span<const Tensor> in) { return clamp_max(in[0], -0.2); }, {away_from(s, 3, {-0.2})});
    check_gradients([](std::span<const Tensor> in) { return abs(in[0]); }, {away_from(s, 4, {0.0})});
    check_gradients([](std::span<const Tensor> in) { return tinynet::sqrt(in[0]); },
                    {random_input(s, 5, true, 0.1, 2.0)});
    // Independent draws: no two within the finite-difference step of each other.
    check_gradients([](std::span<const Tensor> in) { return maximum(in[0], in[1]); },
                    {random_input(s, 6), random_input(s, 7)});
    check_gradients([](std::span<const Tensor> in) { return minimum(in[0], in[1]); },
                    {random_input(s, 8), random_input(s, 9)});
  }
  // Broadcast operands.
  check_gradients([](std::span<const Tensor> in) { return maximum(in[0], in[1]); },
                  {random_input({3, 4}, 9), random_input({4}, 10)});
  check_gradients([](std::span<const Tensor> in) { return minimum(in[0], in[1]); },
                  {random_input({3, 1}, 11), random_input({1, 4}, 12)});
  check_accumulates([](std::span<const Tensor> in) { return clamp(in[0], -0.5, 0.5); },
                    {away_from({6}, 13, {-.5, .5})});
  check_accumulates([](std::span<const Tensor> in) { return abs(in[0]); }, {away_from({6}, 14, {0.0})});
  check_accumulates([](std::span<const Tensor> in) { return tinynet::sqrt(in[0]); },
                    {random_input({6}, 15, true, 1, 2)});
  check_accumulates([](std::span<const Tensor> in) { return maximum(in[0], in[1]); },
                    {random_input({2, 3}, 16), random_input({3}, 17)});
  check_accumulates([](std::span<const Tensor> in) { return minimum(in[0], in[1]); },
                    {random_input({2, 3}, 18), random_input({2, 1}, 19)});
}

TEST_CASE("clamp, abs, maximum, minimum: PyTorch's gradient at the kinks and ties", "[ops][minmax]") {
  // clamp passes the gradient where min <= x <= max, bounds included.
  const Tensor x = from_vector<double>({-1.0, -0.5, 0.0, 0.5, 1.0}, {5}).requires_grad_();
  sum(clamp(x, -0.5, 0.5)).backward();
  CHECK(all_values(x.grad()) == std::vector<double>{0, 1, 1, 1, 0});
  // abs: sign(x), 0 at 0.
  const Tensor z = from_vector<double>({-2.0, 0.0, 3.0}, {3}).requires_grad_();
  sum(abs(z)).backward();
  CHECK(all_values(z.grad()) == std::vector<double>{-1, 0, 1});
  // maximum and minimum split a tie half and half.
  const Tensor a = from_vector<double>({1.0, 2.0, 3.0}, {3}).requires_grad_();
  const Tensor b = from_vector<double>({1.0, 5.0, 0.0}, {3}).requires_grad_();
  sum(maximum(a, b)).backward();
  CHECK(all_values(a.grad()) == std::vector<double>{0.5, 0, 1});
  CHECK(all_values(b.grad()) == std::vector<double>{0.5, 1, 0});
  Tensor(a).set_grad(Tensor());
  Tensor(b).set_grad(Tensor());
  sum(minimum(a, b)).backward();
  CHECK(all_values(a.grad()) == std::vector<double>{0.5, 1, 0});
  CHECK(all_values(b.grad()) == std::vector<double>{0.5, 0, 1});
  // A tensor against itself: both halves come back, 1 in all.
  const Tensor s = random_input({4}, 20);
  sum(maximum(s, s)).backward();
  CHECK(all_values(s.grad()) == std::vector<double>(4, 1.0));
  // sqrt at 0: an infinite gradient, as PyTorch.
  const Tensor zero = zeros({1}, {.dtype = DType::float64, .requires_grad = true});
  tinynet::sqrt(zero).backward(ones({1}, {.dtype = DType::float64}));
  CHECK(std::isinf(zero.grad().item()));
}

TEST_CASE("clamp, abs, sqrt, maximum, minimum: bfloat16 in float, rounded once", "[ops][minmax]") {
  const Tensor x = random_input({16}, 21, false, -2.0, 2.0).to(DType::float32);
  const Tensor h = x.to(DType::bfloat16);
  const auto rounded = [](const Tensor& t) { return all_values(t.to(DType::bfloat16)); };
  CHECK(clamp(h, -1.0, 1.0).dtype() == DType::bfloat16);
  CHECK(all_values(clamp(h, -1.0, 1.0)) == rounded(clamp(h.to(DType::float32), -1.0, 1.0)));
  CHECK(all_values(abs(h)) == rounded(abs(h.to(DType::float32))));
  CHECK(all_values(tinynet::sqrt(abs(h))) == rounded(tinynet::sqrt(abs(h.to(DType::float32)))));
  CHECK(all_values(maximum(h, h * 0.5)) == rounded(maximum(h.to(DType::float32), (h * 0.5).to(DType::float32))));
}

TEST_CASE("clamp, abs, sqrt, maximum, minimum: misuse names the op", "[ops][minmax][errors]") {
  const Tensor x = zeros({2, 3});
  CHECK_THROWS_AS(clamp(x, std::nullopt, std::nullopt), ValueError);
  CHECK_THROWS_WITH(clamp(x, std::nullopt, std::nullopt), Catch::Contains("clamp: at least one of min and max"));
  CHECK_THROWS_AS(maximum(x, zeros({4})), ShapeError);
  CHECK_THROWS_WITH(maximum(x, zeros({4})), Catch::Contains("maximum: shapes [2, 3] and [4]"));
  CHECK_THROWS_WITH(minimum(x, zeros({3, 2})), Catch::Contains("minimum: shapes [2, 3] and [3, 2]"));
  const Tensor labels = zeros({3}, {.dtype = DType::int64});
  CHECK_THROWS_AS(abs(labels), TypeError);
  CHECK_THROWS_WITH(abs(labels), Catch::Contains("abs") && Catch::Contains("int64"));
  CHECK_THROWS_WITH(tinynet::sqrt(labels), Catch::Contains("sqrt") && Catch::Contains("int64"));
  CHECK_THROWS_WITH(clamp(labels, 0.0, 1.0), Catch::Contains("clamp") && Catch::Contains("int64"));
}
