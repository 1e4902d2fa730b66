// leaky_relu, gelu (exact and tanh) and silu: values against std:: math, float64 gradchecks,
// backward adding into an existing gradient, bfloat16 as relu takes it, and misuse.

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <tuple>

#include "op_testing.hpp"

using namespace tinynet;
using namespace tinynet::testing;

namespace {

struct ActivationCase {
  std::string name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> ref;
};

double gelu_exact(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }

std::vector<ActivationCase> activation_cases() {
  return {
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x); }, [](double x) { return x > 0 ? x : 0.01 * x; }},
      {"leaky_relu 0.2", [](const Tensor& x) { return leaky_relu(x, 0.2); },
       [](double x) { return x > 0 ? x : 0.2 * x; }},
      {"leaky_relu -1.5", [](const Tensor& x) { return leaky_relu(x, -1.5); },
       [](double x) { return x > 0 ? x : -1.5 * x; }},
      {"gelu", [](const Tensor& x) { return gelu(x); }, gelu_exact},
      {"gelu tanh", [](const Tensor& x) { return gelu(x, "tanh"); }, gelu_tanh},
      {"silu", [](const Tensor& x) { return silu(x); }, [](double x) { return x / (1 + std::exp(-x)); }},
  };
}

}  // namespace

TEST_CASE("activations: leaky_relu, gelu and silu match std:: math", "[ops][activations]") {
  for (const auto& c : activation_cases()) {
    INFO(c.name);
    const Tensor x = random_input({4, 9}, 1, false, -5.0, 5.0);
    std::vector<double> expected;
    for (double v : values(x)) expected.push_back(c.ref(v));
    const Tensor y = c.op(x);
    CHECK(y.shape() == x.shape());
    CHECK(y.dtype() == DType::float64);
    check_close(y, expected, 1e-14);
    check_close(c.op(x.to(DType::float32)), expected, 1e-6);
  }
}

TEST_CASE("activations: gradients match finite differences", "[ops][activations][gradcheck]") {
  // leaky_relu's kink at 0 is kept clear of the finite-difference step.
  for (const auto& c : activation_cases())
    for (const Shape& s : {Shape{1, 5}, Shape{3, 7}, Shape{2, 3, 4}}) {
      INFO(c.name << " on " << s);
      check_gradients([&](std::span<const Tensor> in) { return c.op(in[0]); }, {away_from_zero(s, 2, 0.05)});
      const Tensor wide = random_input(s, 3, true, -6.0, 6.0);  // the tails of gelu and silu too
      if (c.name.starts_with("leaky")) continue;
      check_gradients([&](std::span<const Tensor> in) { return c.op(in[0]); }, {wide});
    }
}

TEST_CASE("activations: backward adds into an existing gradient", "[ops][activations]") {
  for (const auto& c : activation_cases()) {
    INFO(c.name);
    check_accumulates([&](std::span<const Tensor> in) { return c.op(in[0]); }, {away_from_zero({5, 6}, 4, 0.05)});
  }
  // Many parallel chunks in float32, through the vectorised backward loop.
  const std::int64_t n = 3 * kElementwiseGrain + 13;
  const Tensor x = random_input({n}, 5, false, -4.0, 4.0).to(DType::float32).requires_grad_();
  const Tensor g = random_input({n}, 6, false).to(DType::float32);
  add(silu(x), gelu(x)).backward(g);
  const std::vector<double> xv = values(x), gv = values(g), dx = values(x.grad());
  double worst = 0;
  for (std::size_t i = 0; i < xv.size(); ++i) {
    const double s = 1 / (1 + std::exp(-xv[i]));
    const double pdf = std::exp(-0.5 * xv[i] * xv[i]) / std::sqrt(2 * M_PI);
    const double d = gv[i] * (s * (1 + xv[i] * (1 - s)) + 0.5 * (1 + std::erf(xv[i] / std::sqrt(2.0))) + xv[i] * pdf);
    worst = std::max(worst, std::abs(dx[i] - d));
  }
  CHECK(worst < 1e-5);
}

TEST_CASE("activations on bfloat16: the float value rounded once, as relu", "[ops][activations][bf16]") {
  const Tensor x = random_input({500}, 7, false, -4.0, 4.0);
  const Tensor x16 = cast(x, DType::bfloat16);
  for (const auto& c : activation_cases()) {
    INFO(c.name);
    const Tensor y = c.op(x16);
    REQUIRE(y.dtype() == DType::bfloat16);
    const Tensor expected = cast(c.op(cast(x16, DType::float32)), DType::bfloat16);
    CHECK(values(cast(y, DType::float64)) == values(cast(expected, DType::float64)));
  }
  // The gradient flows back to the float32 leaf through the bfloat16 cast.
  const Tensor leaf = x.to(DType::float32).requires_grad_();
  sum(cast(gelu(cast(leaf, DType::bfloat16)), DType::float32)).backward();
  REQUIRE(leaf.grad().defined());
  CHECK(leaf.grad().dtype() == DType::float32);
}

TEST_CASE("activations: misuse names the op", "[ops][activations][errors]") {
  CHECK_THROWS_AS(gelu(zeros({2}), "erf"), ValueError);
  CHECK_THROWS_WITH(gelu(zeros({2}), "erf"),
                    Catch::Contains("gelu") && Catch::Contains("'none' or 'tanh'") && Catch::Contains("'erf'"));
  const Tensor labels = zeros({3}, {.dtype = DType::int64});
  CHECK_THROWS_WITH(leaky_relu(labels), Catch::Contains("leaky_relu") && Catch::Contains("int64"));
  CHECK_THROWS_WITH(gelu(labels), Catch::Contains("gelu") && Catch::Contains("int64"));
  CHECK_THROWS_WITH(silu(labels), Catch::Contains("silu") && Catch::Contains("int64"));
}

TEST_CASE("leaky_relu: NaN and infinities as PyTorch's, in the vectorised loop too", "[ops][activations]") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const std::int64_t n = 2 * kElementwiseGrain + 5;
  std::vector<double> xs(static_cast<std::size_t>(n)), gs(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double pattern[] = {nan, inf, -inf, 2.0, -2.0};
    xs[i] = pattern[i % 5];
    gs[i] = i % 3 ? inf : 1.0;
  }
  const Tensor x = from_vector(xs, {n}).to(DType::float32).requires_grad_();
  const Tensor y = leaky_relu(x, 0.25);
  y.backward(from_vector(gs, {n}).to(DType::float32));
  const std::vector<double> yv = values(y), dx = values(x.grad());
  std::int64_t wrong = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double want_y = xs[i] > 0 ? xs[i] : 0.25 * xs[i], want_dx = xs[i] > 0 ? gs[i] : 0.25 * gs[i];
    wrong += !(yv[i] == want_y || (std::isnan(want_y) && std::isnan(yv[i])));
    wrong += !(dx[i] == want_dx);
  }
  CHECK(wrong == 0);
}

TEST_CASE("add_relu: relu(a + b) in one op, the same bits forward and backward", "[ops][activations][gradcheck]") {
  for (const DType dtype : {DType::float32, DType::float64}) {
    INFO(dtype);
    // More elements than one parallel chunk. Each operand needs a gradient or not; where a
    // also feeds a second term, add_relu's gradient for it is added to that term's
    // (whose node runs first), else written.
    const Shape shape{3, 4, 50, 60};
    for (const auto& [a_grad, b_grad, a_twice] : {std::tuple{true, true, true}, std::tuple{true, false, true},
                                                  std::tuple{false, true, false}, std::tuple{true, true, false}}) {
      INFO("a needs a gradient: " << a_grad << ", b: " << b_grad << ", a feeds a second term: " << a_twice);
      const auto run = [&](bool fused) {
        const Tensor a = random_input(shape, 70, false, -2.0, 2.0).to(dtype).requires_grad_(a_grad);
        const Tensor b = random_input(shape, 71, false, -2.0, 2.0).to(dtype).requires_grad_(b_grad);
        const Tensor y = fused ? add_relu(a, b) : relu(add(a, b));
        CHECK(y.grad_fn()->name() == std::string(fused ? "add_relu" : "relu"));
        Tensor loss = sum(mul(y, random_input(shape, 72, false).to(dtype)));
        if (a_twice) loss = add(loss, sum(mul(a, a)));
        loss.backward();
        return std::vector<std::vector<double>>{values(y), a_grad ? values(a.grad()) : std::vector<double>{},
                                                b_grad ? values(b.grad()) : std::vector<double>{}};
      };
      CHECK(run(true) == run(false));
    }
  }
  // One operand twice: both gradients land on it, here over more than one parallel chunk,
  // and added to a gradient it already has.
  const Tensor x = random_input({3, 4, 50, 60}, 73, false).requires_grad_(), x2 = x.detach().requires_grad_();
  for (int pass = 0; pass < 2; ++pass) {
    sum(add_relu(x, x)).backward();
    sum(relu(add(x2, x2))).backward();
    CHECK(values(x.grad()) == values(x2.grad()));
  }
  check_gradients([](std::span<const Tensor> in) { return add_relu(in[0], in[1]); },
                  {away_from_zero({2, 3, 4}, 74), random_input({2, 3, 4}, 75, true, -0.01, 0.01)});
  // Broadcasting and bfloat16 operands take the two ops.
  const Tensor row = random_input({4}, 76, false);
  CHECK(values(add_relu(random_input({3, 4}, 77, false), row)) ==
        values(relu(add(random_input({3, 4}, 77, false), row))));
  const Tensor h = cast(random_input({3, 4}, 78, false), DType::bfloat16);
  CHECK(add_relu(h, h).dtype() == DType::bfloat16);
  CHECK(values(cast(add_relu(h, h), DType::float64)) == values(cast(relu(add(h, h)), DType::float64)));
  // A float32 operand beside a bfloat16 one: promoted as add promotes (a residual sum under
  // autocast, batch norm's float32 output beside a convolution's bfloat16 one).
  const Tensor f = random_input({3, 4}, 79, false).to(DType::float32);
  for (const auto& [x, y] : {std::pair{f, h}, std::pair{h, f}}) {
    REQUIRE(add_relu(x, y).dtype() == DType::float32);
    CHECK(values(add_relu(x, y)) == values(relu(add(x, y))));
  }
  CHECK_THROWS_WITH(add_relu(zeros({2}), zeros({2}, {.dtype = DType::float64})), Catch::Contains("add_relu"));
}
