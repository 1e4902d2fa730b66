#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <tinynet/tinynet.hpp>
#include <vector>

#include "ops/op_testing.hpp"

using namespace tinynet;
using namespace tinynet::testing;

namespace {

/// Naive numpy broadcasting: element i of `out` reads each operand at the multi-index of
/// i, with extent-1 and missing leading dims pinned to 0.
std::int64_t broadcast_source(std::int64_t i, const Shape& out, const Shape& in) {
  std::int64_t offset = 0, stride = 1;
  for (int d = out.rank() - 1; d >= 0; --d) {
    const std::int64_t coord = i % out[d];
    i /= out[d];
    const int di = d - (out.rank() - in.rank());
    if (di < 0) continue;
    if (in[di] != 1) offset += coord * stride;
    stride *= in[di];
  }
  return offset;
}

std::vector<double> binary_reference(const Tensor& a, const Tensor& b, const Shape& out,
                                     const std::function<double(double, double)>& f) {
  const auto va = values(a), vb = values(b);
  std::vector<double> r(static_cast<std::size_t>(out.numel()));
  for (std::int64_t i = 0; i < out.numel(); ++i)
    r[static_cast<std::size_t>(i)] = f(va[static_cast<std::size_t>(broadcast_source(i, out, a.shape()))],
                                       vb[static_cast<std::size_t>(broadcast_source(i, out, b.shape()))]);
  return r;
}

struct BinaryCase {
  const char* name;
  Tensor (*op)(const Tensor&, const Tensor&);
  double (*ref)(double, double);
};

const BinaryCase kBinary[] = {
    {"add", add, [](double a, double b) { return a + b; }},
    {"sub", sub, [](double a, double b) { return a - b; }},
    {"mul", mul, [](double a, double b) { return a * b; }},
    {"div", div, [](double a, double b) { return a / b; }},
};

struct ShapePair {
  Shape a, b, out;
};

// Same shapes, a trailing dim, a channel dim [C,1,1] against [N,C,H,W], rank-0 scalars on
// either side, both operands broadcast, and batch 1.
const ShapePair kBroadcastShapes[] = {
    {{3, 4}, {3, 4}, {3, 4}},
    {{2, 3, 5}, {5}, {2, 3, 5}},
    {{2, 3, 4, 5}, {3, 1, 1}, {2, 3, 4, 5}},
    {{2, 3}, {}, {2, 3}},
    {{}, {4, 3}, {4, 3}},
    {{3, 1}, {1, 5}, {3, 5}},
    {{1, 3, 1, 1}, {1, 3, 2, 2}, {1, 3, 2, 2}},
};

}  // namespace

TEST_CASE("elementwise: add, sub, mul, div match a naive broadcasting loop", "[ops][elementwise]") {
  for (const auto& op : kBinary)
    for (const auto& s : kBroadcastShapes) {
      INFO(op.name << " of " << s.a << " and " << s.b);
      const Tensor a = random_input(s.a, 1, false);
      const Tensor b = away_from_zero(s.b, 2, 0.5, false);
      const Tensor y = op.op(a, b);
      CHECK(y.shape() == s.out);
      check_close(y, binary_reference(a, b, s.out, op.ref), 1e-15);
    }
}

TEST_CASE("elementwise: float32 kernels match the double reference", "[ops][elementwise]") {
  const Tensor a = random_input({2, 3, 4, 5}, 3, false).to(DType::float32);
  const Tensor b = away_from_zero({3, 1, 1}, 4, 0.5, false).to(DType::float32);
  for (const auto& op : kBinary) {
    INFO(op.name);
    const Tensor y = op.op(a, b);
    CHECK(y.dtype() == DType::float32);
    check_close(y, binary_reference(a, b, y.shape(), op.ref), 1e-6);
  }
}

TEST_CASE("elementwise: large broadcast ops take the parallel path and stay exact", "[ops][elementwise]") {
  // 256 x 1024 elements: more than one chunk of kElementwiseGrain, forward and backward.
  const Tensor a = random_input({256, 1024}, 5);
  const Tensor b = away_from_zero({1024}, 6, 0.5);
  const Tensor y = mul(a, b);
  check_close(y, binary_reference(a, b, y.shape(), [](double x, double z) { return x * z; }), 1e-15);
  const Tensor gy = random_input(y.shape(), 7, false);
  y.backward(gy);
  std::vector<double> ga(static_cast<std::size_t>(a.numel())), gb(1024, 0.0);
  const auto va = values(a), vb = values(b), vg = values(gy);
  for (std::size_t i = 0; i < ga.size(); ++i) {
    ga[i] = vg[i] * vb[i % 1024];
    gb[i % 1024] += vg[i] * va[i];
  }
  check_close(a.grad(), ga, 1e-15);
  check_close(b.grad(), gb, 1e-12);
}

TEST_CASE("elementwise: binary gradients match finite differences", "[ops][elementwise][gradcheck]") {
  for (const auto& op : kBinary)
    for (const auto& s : kBroadcastShapes) {
      INFO(op.name << " of " << s.a << " and " << s.b);
      check_gradients([&](std::span<const Tensor> in) { return op.op(in[0], in[1]); },
                      {random_input(s.a, 11), away_from_zero(s.b, 12, 0.5)});
    }
  SECTION("one operand a constant") {
    check_gradients([](std::span<const Tensor> in) { return mul(in[0], in[1]); },
                    {random_input({2, 3}, 13), random_input({3}, 14, false)});
    check_gradients([](std::span<const Tensor> in) { return div(in[1], in[0]); },
                    {away_from_zero({2, 3}, 15, 0.5), random_input({3}, 16, false)});
  }
}

namespace {

struct UnaryCase {
  std::string name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> ref;
  bool positive_input;  // the op is only defined (or smooth) for x > 0
};

std::vector<UnaryCase> unary_cases() {
  return {
      {"neg", [](const Tensor& x) { return neg(x); }, [](double x) { return -x; }, false},
      {"operator-", [](const Tensor& x) { return -x; }, [](double x) { return -x; }, false},
      {"relu", [](const Tensor& x) { return relu(x); }, [](double x) { return x > 0 ? x : 0.0; }, false},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, [](double x) { return 1 / (1 + std::exp(-x)); }, false},
      {"tanh", [](const Tensor& x) { return tinynet::tanh(x); }, [](double x) { return std::tanh(x); }, false},
      {"exp", [](const Tensor& x) { return tinynet::exp(x); }, [](double x) { return std::exp(x); }, false},
      {"log", [](const Tensor& x) { return tinynet::log(x); }, [](double x) { return std::log(x); }, true},
      {"pow 2", [](const Tensor& x) { return tinynet::pow(x, 2); }, [](double x) { return x * x; }, false},
      {"pow 3", [](const Tensor& x) { return tinynet::pow(x, 3); }, [](double x) { return x * x * x; }, false},
      {"pow 0.5", [](const Tensor& x) { return tinynet::pow(x, 0.5); }, [](double x) { return std::sqrt(x); }, true},
      {"pow -1.5", [](const Tensor& x) { return tinynet::pow(x, -1.5); },
       [](double x) { return 1 / (x * std::sqrt(x)); }, true},
      {"x + 2.5", [](const Tensor& x) { return x + 2.5; }, [](double x) { return x + 2.5; }, false},
      {"2.5 + x", [](const Tensor& x) { return 2.5 + x; }, [](double x) { return 2.5 + x; }, false},
      {"x - 1.5", [](const Tensor& x) { return x - 1.5; }, [](double x) { return x - 1.5; }, false},
      {"1.5 - x", [](const Tensor& x) { return 1.5 - x; }, [](double x) { return 1.5 - x; }, false},
      {"x * -3", [](const Tensor& x) { return x * -3.0; }, [](double x) { return x * -3.0; }, false},
      {"-3 * x", [](const Tensor& x) { return -3.0 * x; }, [](double x) { return -3.0 * x; }, false},
      {"x / 4", [](const Tensor& x) { return x / 4.0; }, [](double x) { return x / 4.0; }, false},
  };
}

Tensor unary_input(const UnaryCase& c, const Shape& shape, std::uint64_t seed, bool requires_grad) {
  // ReLU's kink at 0 and log/sqrt's pole are kept well clear of the finite-difference step.
  if (c.positive_input) return random_input(shape, seed, requires_grad, 0.2, 3.0);
  return away_from_zero(shape, seed, 0.05, requires_grad);
}

}  // namespace

TEST_CASE("elementwise: unary and scalar ops match std:: math", "[ops][elementwise]") {
  for (const auto& c : unary_cases()) {
    INFO(c.name);
    const Tensor x = unary_input(c, {3, 7}, 21, false);
    std::vector<double> expected;
    for (double v : values(x)) expected.push_back(c.ref(v));
    const Tensor y = c.op(x);
    CHECK(y.shape() == x.shape());
    check_close(y, expected, 1e-14);
    // float32 runs the same kernel templated on float.
    check_close(c.op(x.to(DType::float32)), expected, 1e-6);
  }
}

TEST_CASE("elementwise: unary gradients match finite differences", "[ops][elementwise][gradcheck]") {
  const Shape shapes[] = {{1, 5}, {3, 7}, {2, 3, 4}};
  for (const auto& c : unary_cases())
    for (const auto& s : shapes) {
      INFO(c.name << " on " << s);
      check_gradients([&](std::span<const Tensor> in) { return c.op(in[0]); }, {unary_input(c, s, 31, true)});
    }
}

TEST_CASE("elementwise: unary backward over many chunks, written and accumulated", "[ops][elementwise]") {
  // Several parallel chunks (kElementwiseGrain elements each) and a ragged end, in float32,
  // the vectorized CPU loop. z = f(x) + f(x): the second node adds into x's gradient.
  const std::int64_t n = 3 * kElementwiseGrain + 13;
  const Tensor x = random_input({n}, 41, false).to(DType::float32).requires_grad_();
  Tensor g = random_input({n}, 42, false).to(DType::float32);
  float* gp = g.data<float>();
  const float* xp = x.data<float>();
  // ReLU passes g where x > 0 and 0 elsewhere, even where g is not finite (as PyTorch's
  // threshold_backward does): a multiply by the 0/1 derivative would make NaN there.
  for (std::int64_t i = 0; i < n; i += 7)
    if (xp[i] <= 0) gp[i] = i % 2 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();

  add(relu(x), relu(x)).backward(g);
  const float* dx = x.grad().data<float>();
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < n; ++i) wrong += dx[i] != (xp[i] > 0 ? 2 * gp[i] : 0.0f);
  CHECK(wrong == 0);

  const Tensor xs = random_input({n}, 43, false).to(DType::float32).requires_grad_();
  const Tensor gs = random_input({n}, 44, false).to(DType::float32);
  add(sigmoid(xs), sigmoid(xs)).backward(gs);
  const std::vector<double> got = values(xs.grad()), xv = values(xs), gv = values(gs);
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double y = 1 / (1 + std::exp(-xv[i])), want = 2 * gv[i] * y * (1 - y);
    worst = std::max(worst, std::abs(got[i] - want));
  }
  CHECK(worst < 1e-6);  // |g y (1 - y)| <= 1/4 here: a few float32 roundings of values below 1
}

TEST_CASE("elementwise: saturated activations stay finite", "[ops][elementwise]") {
  const Tensor x = from_vector<double>({-800.0, -30.0, 0.0, 30.0, 800.0}, {5});
  for (double v : values(sigmoid(x))) CHECK(std::isfinite(v));
  for (double v : values(tinynet::tanh(x))) CHECK(std::isfinite(v));
  CHECK(values(sigmoid(x))[4] == 1.0);
  CHECK(values(tinynet::tanh(x))[0] == -1.0);
}

TEST_CASE("elementwise: misuse throws errors that name the problem", "[ops][elementwise][errors]") {
  const Tensor a = zeros({2, 3});
  const Tensor b = zeros({4});
  CHECK_THROWS_AS(add(a, b), ShapeError);
  CHECK_THROWS_WITH(add(a, b), Catch::Contains("add") && Catch::Contains("[2, 3]") && Catch::Contains("[4]") &&
                                   Catch::Contains("cannot be broadcast"));
  CHECK_THROWS_AS(mul(zeros({2, 3, 4, 5}), zeros({2, 1, 1})), ShapeError);
  CHECK_THROWS_WITH(mul(zeros({2, 3, 4, 5}), zeros({2, 1, 1})), Catch::Contains("mul") && Catch::Contains("3 vs 2"));

  const Tensor d = zeros({2, 3}, {.dtype = DType::float64});
  CHECK_THROWS_AS(sub(a, d), TypeError);
  CHECK_THROWS_WITH(sub(a, d), Catch::Contains("sub") && Catch::Contains("float64") && Catch::Contains("float32"));

  const Tensor labels = zeros({2, 3}, {.dtype = DType::int64});
  CHECK_THROWS_AS(div(labels, a), TypeError);
  CHECK_THROWS_WITH(div(labels, a),
                    Catch::Contains("div") && Catch::Contains("first operand") && Catch::Contains("int64"));
  CHECK_THROWS_AS(relu(labels), TypeError);
  CHECK_THROWS_WITH(tinynet::exp(labels), Catch::Contains("exp") && Catch::Contains("int64"));
  CHECK_THROWS_WITH(add(a, Tensor()), Catch::Contains("add") && Catch::Contains("undefined"));
}
