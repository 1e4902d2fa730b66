#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <tinynet/tinynet.hpp>

#include "ops/op_testing.hpp"

using namespace tinynet;
using namespace tinynet::testing;

namespace {

/// Which mistake a deliberately wrong backward makes.
enum class Mistake {
  none,              // correct: d(a*b)/da = b, d(a*b)/db = a
  wrong_formula,     // dL/da = 1.5 * b gy (a wrong derivative everywhere)
  one_entry,         // dL/db is off by 0.25 at element 2 only
  ignores_upstream,  // dL/da = b, as if the upstream gradient were all ones
  skips_input,       // never writes dL/db
};

/// y = a * b (same shapes, float64), with a backward that makes `mistake`.
class FaultyMul final : public autograd::Node {
 public:
  FaultyMul(Tensor a, Tensor b, Mistake m) : a_(std::move(a)), b_(std::move(b)), mistake_(m) {}
  const char* name() const override { return "faulty_mul"; }
  void release() override { a_ = b_ = Tensor(); }
  void backward(const Tensor& gy) override {
    const double* g = gy.data<double>();
    for (std::size_t input = 0; input < 2; ++input) {
      if (!needs_input_grad(input) || (input == 1 && mistake_ == Mistake::skips_input)) continue;
      const double* other = (input == 0 ? b_ : a_).data<double>();
      auto slot = input_grad(input);
      double* d = slot.grad.data<double>();
      for (std::int64_t i = 0; i < gy.numel(); ++i) {
        double v = other[i] * g[i];
        if (input == 0 && mistake_ == Mistake::wrong_formula) v *= 1.5;
        if (input == 0 && mistake_ == Mistake::ignores_upstream) v = other[i];
        if (input == 1 && mistake_ == Mistake::one_entry && i == 2) v += 0.25;
        d[i] = slot.accumulate ? d[i] + v : v;
      }
    }
  }

 private:
  Tensor a_, b_;
  Mistake mistake_;
};

Tensor faulty_mul(const Tensor& a, const Tensor& b, Mistake m) {
  Tensor y = empty_like(a);
  for (std::int64_t i = 0; i < a.numel(); ++i) y.data<double>()[i] = a.data<double>()[i] * b.data<double>()[i];
  if (autograd::any_needs_grad(a, b)) autograd::record(y, std::make_shared<FaultyMul>(a, b, m), {&a, &b});
  return y;
}

GradcheckResult check(Mistake m) {
  return gradcheck([m](std::span<const Tensor> in) { return faulty_mul(in[0], in[1], m); },
                   {random_input({2, 3}, 1), random_input({2, 3}, 2)});
}

}  // namespace

TEST_CASE("gradcheck: a correct backward passes and every element is compared", "[autograd][gradcheck]") {
  const GradcheckResult r = check(Mistake::none);
  CHECK(r.checked == 12);
  CHECK(r.max_rel_error <= kGradTolerance);
}

TEST_CASE("gradcheck: a wrong derivative gives a large error", "[autograd][gradcheck]") {
  const GradcheckResult r = check(Mistake::wrong_formula);
  CHECK(r.max_rel_error > 0.1);
  CHECK(r.worst_input == 0);
  // The tape claims 1.5 times the true derivative at the worst element.
  CHECK(r.analytic == Approx(1.5 * r.numeric).epsilon(1e-6));
}

TEST_CASE("gradcheck: one wrong entry is found and located", "[autograd][gradcheck]") {
  const GradcheckResult r = check(Mistake::one_entry);
  CHECK(r.worst_input == 1);
  CHECK(r.worst_index == 2);
  CHECK(r.analytic - r.numeric == Approx(0.25).margin(1e-6));
  CHECK(r.max_rel_error >= 0.25 / std::max({1.0, std::abs(r.analytic), std::abs(r.numeric)}) - 1e-6);
  CHECK(r.max_rel_error > kGradTolerance);
}

TEST_CASE("gradcheck: a backward that ignores the upstream gradient is caught", "[autograd][gradcheck]") {
  // The random upstream gradient v makes dL/dx = v * dy/dx differ from dy/dx.
  const GradcheckResult r = check(Mistake::ignores_upstream);
  CHECK(r.worst_input == 0);
  CHECK(r.max_rel_error > 0.1);
}

TEST_CASE("gradcheck: an input backward never reaches is an error", "[autograd][gradcheck][errors]") {
  CHECK_THROWS_AS(check(Mistake::skips_input), Error);
  CHECK_THROWS_WITH(check(Mistake::skips_input), Catch::Contains("input 1 requires grad but backward gave it none"));
}

TEST_CASE("gradcheck: only inputs that require grad are checked, and they must be float64",
          "[autograd][gradcheck][errors]") {
  const auto fn = [](std::span<const Tensor> in) { return faulty_mul(in[0], in[1], Mistake::one_entry); };
  // The faulty gradient belongs to input 1; with input 1 constant nothing is wrong.
  const GradcheckResult r = gradcheck(fn, {random_input({2, 3}, 3), random_input({2, 3}, 4, false)});
  CHECK(r.checked == 6);
  CHECK(r.max_rel_error <= kGradTolerance);

  // An undefined input stands for an omitted optional argument and is passed through.
  const GradcheckResult lin = gradcheck([](std::span<const Tensor> in) { return linear(in[0], in[1], in[2]); },
                                        {random_input({2, 3}, 5), random_input({4, 3}, 6), Tensor()});
  CHECK(lin.checked == 18);
  CHECK(lin.max_rel_error <= kGradTolerance);

  const auto relu_fn = [](std::span<const Tensor> in) { return relu(in[0]); };
  CHECK_THROWS_AS(gradcheck(relu_fn, {randn({3}, {.requires_grad = true})}), TypeError);
  CHECK_THROWS_WITH(gradcheck(relu_fn, {randn({3}, {.requires_grad = true})}),
                    Catch::Contains("must be float64, got float32"));
}
