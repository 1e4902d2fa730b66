// clip_grad_norm_ against the norm computed here element by element, in float64.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <tinynet/tinynet.hpp>
#include <vector>

using namespace tinynet;

namespace clip_grad_testing {

/// Two float64 leaves whose gradients are `ga` and `gb` (through a backward), and a third
/// without one.
std::vector<Tensor> params_with_grads(const std::vector<double>& ga, const std::vector<double>& gb) {
  Tensor a = zeros({std::int64_t(ga.size())}, {.dtype = DType::float64, .requires_grad = true});
  Tensor b = zeros({2, std::int64_t(gb.size()) / 2}, {.dtype = DType::float64, .requires_grad = true});
  Tensor unused = zeros({3}, {.dtype = DType::float64, .requires_grad = true});
  const Tensor wa = from_vector(ga, Shape{std::int64_t(ga.size())});
  const Tensor wb = from_vector(gb, Shape{2, std::int64_t(gb.size()) / 2});
  (sum(mul(a, wa)) + sum(mul(b, wb))).backward();
  return {a, unused, b};
}

std::vector<double> grad_values(const Tensor& p) {
  const Tensor g = p.grad();
  return {g.data<double>(), g.data<double>() + g.numel()};
}

}  // namespace clip_grad_testing

TEST_CASE("clip_grad_norm_: the joint norm of every gradient, which it scales down to max_norm", "[nn][clip_grad]") {
  using namespace clip_grad_testing;
  const std::vector<double> ga = {3.0, -4.0, 0.5}, gb = {1.0, -2.0, 0.0, 6.0};
  std::vector<double> all = ga;
  all.insert(all.end(), gb.begin(), gb.end());
  for (double p : {2.0, 1.0, 3.0, std::numeric_limits<double>::infinity()}) {
    INFO("norm_type " << p);
    double want = 0;
    for (double v : all) want = std::isinf(p) ? std::max(want, std::fabs(v)) : want + std::pow(std::fabs(v), p);
    if (!std::isinf(p)) want = std::pow(want, 1 / p);
    {  // above max_norm: every gradient scaled by max_norm / (norm + 1e-6)
      const auto params = params_with_grads(ga, gb);
      const double norm = nn::utils::clip_grad_norm_(params, 2.5, p);
      CHECK(norm == Approx(want).epsilon(1e-14));
      const double coef = 2.5 / (want + 1e-6);
      const auto a = grad_values(params[0]), b = grad_values(params[2]);
      for (std::size_t i = 0; i < ga.size(); ++i) CHECK(a[i] == Approx(ga[i] * coef).epsilon(1e-14));
      for (std::size_t i = 0; i < gb.size(); ++i) CHECK(b[i] == Approx(gb[i] * coef).epsilon(1e-14));
      CHECK_FALSE(params[1].grad().defined());
      // The clipped gradients' norm is max_norm (less the 1e-6 of the divisor).
      CHECK(nn::utils::clip_grad_norm_(params, 1e9, p) == Approx(2.5).epsilon(1e-6));
    }
    {  // within max_norm: left exactly as they were
      const auto params = params_with_grads(ga, gb);
      CHECK(nn::utils::clip_grad_norm_(params, 100.0, p) == Approx(want).epsilon(1e-14));
      CHECK(grad_values(params[0]) == ga);
      CHECK(grad_values(params[2]) == gb);
    }
  }
}

TEST_CASE("clip_grad_norm_: float32 gradients, no gradients, non-finite norms and misuse", "[nn][clip_grad]") {
  using namespace clip_grad_testing;
  Tensor w = zeros({4}, {.requires_grad = true});
  sum(mul(w, from_vector(std::vector<float>{1, 2, 2, 4}, Shape{4}))).backward();
  CHECK(nn::utils::clip_grad_norm_({w}, 1.0) == Approx(5.0).epsilon(1e-7));
  CHECK(w.grad().data<float>()[3] == Approx(4.0 / (5.0 + 1e-6)).epsilon(1e-6));

  CHECK(nn::utils::clip_grad_norm_({zeros({2}, {.requires_grad = true})}, 1.0) == 0.0);

  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (double p : {2.0, std::numeric_limits<double>::infinity()}) {
    INFO("norm_type " << p);
    const auto params = params_with_grads({1.0, nan}, {1.0, 1.0});
    CHECK_THROWS_WITH(nn::utils::clip_grad_norm_(params, 1.0, p, true),
                      Catch::Contains("clip_grad_norm_: the total norm") && Catch::Contains("nan"));
    CHECK(grad_values(params[2]) == std::vector<double>{1.0, 1.0});  // unchanged by the refusal
    CHECK(std::isnan(nn::utils::clip_grad_norm_(params, 1.0, p)));
  }
  const auto params = params_with_grads({1.0}, {1.0, 1.0});
  CHECK_THROWS_AS(nn::utils::clip_grad_norm_(params, 1.0, 0.0), ValueError);
  CHECK_THROWS_WITH(nn::utils::clip_grad_norm_(params, -1.0),
                    Catch::Contains("clip_grad_norm_: max_norm must be >= 0, got -1"));
}
