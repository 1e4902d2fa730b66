#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <tinynet/tinynet.hpp>
#include <vector>

#include "ops/op_testing.hpp"

using namespace tinynet;
using namespace tinynet::testing;

TEST_CASE("tape: backward accumulates across calls until the grad is reset", "[autograd]") {
  Tensor w = random_input({3}, 1);
  const Tensor c = random_input({3}, 2, false);
  const auto vc = values(c);
  std::vector<double> twice;
  for (double v : vc) twice.push_back(2 * v);

  sum(mul(w, c)).backward();
  check_close(w.grad(), vc, 0.0);
  sum(mul(w, c)).backward();
  check_close(w.grad(), twice, 1e-15);
  w.set_grad(Tensor());
  CHECK_FALSE(w.grad().defined());
  sum(mul(w, c)).backward();
  check_close(w.grad(), vc, 0.0);
  CHECK_FALSE(c.grad().defined());  // constants get no gradient
}

TEST_CASE("tape: a tensor used twice gets both contributions", "[autograd]") {
  Tensor x = away_from_zero({2, 3}, 3, 0.5);
  const auto vx = values(x);
  const auto run = [&](const std::function<Tensor(const Tensor&)>& f, const std::function<double(double)>& df) {
    x.set_grad(Tensor());
    sum(f(x)).backward();
    std::vector<double> expected;
    for (double v : vx) expected.push_back(df(v));
    check_close(x.grad(), expected, 1e-14);
  };
  SECTION("x * x") {
    run([](const Tensor& t) { return mul(t, t); }, [](double v) { return 2 * v; });
  }
  SECTION("x + x") {
    run([](const Tensor& t) { return add(t, t); }, [](double) { return 2.0; });
  }
  SECTION("x - x") {
    run([](const Tensor& t) { return sub(t, t); }, [](double) { return 0.0; });
  }
  SECTION("x / x") {
    run([](const Tensor& t) { return div(t, t); }, [](double) { return 0.0; });
  }
  SECTION("a square matrix times itself") {
    check_gradients([](std::span<const Tensor> in) { return matmul(in[0], in[0]); }, {random_input({4, 4}, 40)});
    check_gradients([](std::span<const Tensor> in) { return linear(in[0], in[0], in[1]); },
                    {random_input({3, 3}, 41), random_input({3}, 42)});
  }
  SECTION("an intermediate used twice: e^x * e^x + e^x") {
    run(
        [](const Tensor& t) {
          const Tensor e = tinynet::exp(t);
          return add(mul(e, e), e);
        },
        [](double v) { return 2 * std::exp(2 * v) + std::exp(v); });
  }
}

TEST_CASE("tape: a weight shared by two linears gets the sum of both gradients", "[autograd]") {
  const Tensor x1 = random_input({4, 3}, 4, false);
  const Tensor x2 = random_input({2, 3}, 5, false);
  Tensor w = random_input({5, 3}, 6);
  Tensor b = random_input({5}, 7);

  // Each use on its own, then both in one graph.
  std::vector<double> gw(15, 0.0), gb(5, 0.0);
  for (const Tensor* x : {&x1, &x2}) {
    w.set_grad(Tensor());
    b.set_grad(Tensor());
    sum(tinynet::tanh(linear(*x, w, b))).backward();
    for (std::size_t i = 0; i < 15; ++i) gw[i] += values(w.grad())[i];
    for (std::size_t i = 0; i < 5; ++i) gb[i] += values(b.grad())[i];
  }
  w.set_grad(Tensor());
  b.set_grad(Tensor());
  add(sum(tinynet::tanh(linear(x1, w, b))), sum(tinynet::tanh(linear(x2, w, b)))).backward();
  check_close(w.grad(), gw, 1e-14);
  check_close(b.grad(), gb, 1e-14);

  // The same weight applied twice in sequence.
  check_gradients(
      [](std::span<const Tensor> in) { return linear(tinynet::tanh(linear(in[0], in[1], in[2])), in[1], in[2]); },
      {random_input({3, 4}, 8), random_input({4, 4}, 9), random_input({4}, 10)});
}

TEST_CASE("tape: NoGradGuard stops recording and restores the mode", "[autograd]") {
  const Tensor x = random_input({2, 3}, 11);
  CHECK(GradMode::is_enabled());
  {
    NoGradGuard outer;
    CHECK_FALSE(GradMode::is_enabled());
    const Tensor y = mul(relu(x), 2.0);
    CHECK(y.grad_fn() == nullptr);
    CHECK_FALSE(y.requires_grad());
    CHECK(linear(x, random_input({4, 3}, 12)).grad_fn() == nullptr);
    CHECK(x.view({3, 2}).grad_fn() == nullptr);
    {
      NoGradGuard inner;
      CHECK_FALSE(GradMode::is_enabled());
    }
    CHECK_FALSE(GradMode::is_enabled());  // the inner guard restored "off", not "on"
    // The mode is per thread.
    bool other_thread_enabled = false;
    std::thread([&] { other_thread_enabled = GradMode::is_enabled(); }).join();
    CHECK(other_thread_enabled);
    CHECK_THROWS_AS(y.backward(), Error);
  }
  CHECK(GradMode::is_enabled());
  const Tensor z = mul(x, 2.0);
  CHECK(z.grad_fn() != nullptr);
  CHECK(z.requires_grad());
  CHECK(std::string(z.grad_fn()->name()) == "mul_scalar");
}

TEST_CASE("tape: detach and constants stay off the tape", "[autograd]") {
  const Tensor x = random_input({2, 2}, 13);
  const Tensor d = mul(x, 3.0).detach();
  CHECK(d.grad_fn() == nullptr);
  CHECK_FALSE(d.requires_grad());
  const Tensor c = random_input({2, 2}, 14, false);
  const Tensor y = add(c, c);
  CHECK(y.grad_fn() == nullptr);
  CHECK_FALSE(y.requires_grad());
  CHECK_THROWS_AS(Tensor(mul(x, 2.0)).requires_grad_(), Error);
  CHECK_THROWS_WITH(Tensor(mul(x, 2.0)).requires_grad_(), Catch::Contains("non-leaf"));
  CHECK_THROWS_AS(zeros({2}, {.dtype = DType::int64}).requires_grad_(), TypeError);
}

TEST_CASE("tape: backward misuse throws errors that name the problem", "[autograd][errors]") {
  const Tensor x = random_input({2, 3}, 15);
  CHECK_THROWS_AS(mul(x, 2.0).backward(), ShapeError);
  CHECK_THROWS_WITH(mul(x, 2.0).backward(),
                    Catch::Contains("seed gradient is needed for a non-scalar output of shape [2, 3]"));
  CHECK_THROWS_AS(mul(x, 2.0).backward(ones({3, 2}, {.dtype = DType::float64})), ShapeError);
  CHECK_THROWS_WITH(mul(x, 2.0).backward(ones({3, 2}, {.dtype = DType::float64})),
                    Catch::Contains("seed gradient has shape [3, 2], output has shape [2, 3]"));
  CHECK_THROWS_AS(mul(x, 2.0).backward(ones({2, 3})), TypeError);
  CHECK_THROWS_AS(random_input({2}, 16, false).backward(ones({2}, {.dtype = DType::float64})), Error);
  CHECK_THROWS_WITH(random_input({2}, 16, false).backward(ones({2}, {.dtype = DType::float64})),
                    Catch::Contains("does not require grad"));
  CHECK_THROWS_WITH(Tensor().backward(), Catch::Contains("undefined"));

  // A gradient set by hand must fit the tensor it belongs to.
  Tensor w = random_input({3, 2}, 43);
  w.set_grad(zeros({2, 3}, {.dtype = DType::float64}));
  CHECK_THROWS_AS(sum(mul(w, 2.0)).backward(), ShapeError);
  CHECK_THROWS_WITH(sum(mul(w, 2.0)).backward(), Catch::Contains("mul_scalar backward") &&
                                                     Catch::Contains("gradient of input 0 has shape [2, 3]") &&
                                                     Catch::Contains("input has shape [3, 2]"));

  const Tensor loss = sum(tinynet::tanh(x));
  loss.backward();
  CHECK_THROWS_AS(loss.backward(), Error);
  CHECK_THROWS_WITH(loss.backward(), Catch::Contains("second time"));
  // A graph that shares a freed part with the first is refused too.
  const Tensor h = tinynet::exp(x);
  sum(h).backward();
  CHECK_THROWS_WITH(sum(mul(h, 2.0)).backward(), Catch::Contains("second time") && Catch::Contains("exp"));
}

TEST_CASE("tape: a very long graph runs backward and is freed without deep recursion", "[autograd]") {
  // 300000 nodes: freed one stack frame per node, this overflows an 8 MiB stack.
  constexpr int kDepth = 300000;
  const Tensor x = random_input({2}, 44);
  const Tensor c = full({2}, 1.0, {.dtype = DType::float64});
  std::weak_ptr<autograd::Node> first;
  {
    Tensor y = mul(x, c);
    first = y.grad_fn();
    for (int i = 0; i < kDepth; ++i) y = add(mul(y, c), 1.0);
    CHECK_FALSE(first.expired());
  }
  CHECK(first.expired());

  Tensor y = x;
  for (int i = 0; i < kDepth; ++i) y = add(mul(y, c), 1.0);
  sum(y).backward();
  check_close(x.grad(), {1.0, 1.0}, 0.0);
}

TEST_CASE("tape: backward from a leaf accumulates the seed", "[autograd]") {
  const Tensor x = random_input({3}, 17);
  const Tensor seed = random_input({3}, 18, false);
  x.backward(seed);
  check_close(x.grad(), values(seed), 0.0);
  CHECK_FALSE(x.grad().shares_storage(seed));
  x.backward(seed);
  std::vector<double> twice;
  for (double v : values(seed)) twice.push_back(2 * v);
  check_close(x.grad(), twice, 0.0);
}

TEST_CASE("tape: post-accumulate hooks fire once per leaf, after its gradient is complete", "[autograd][hooks]") {
  Tensor x = random_input({2, 3}, 19, false);
  Tensor w = random_input({3, 3}, 20);
  Tensor b = random_input({3}, 21);
  Tensor unused = random_input({3}, 22);
  int w_calls = 0, b_calls = 0, unused_calls = 0;
  std::vector<double> w_seen, b_seen;
  w.register_post_accumulate_grad_hook([&](Tensor& p) {
    ++w_calls;
    w_seen = values(p.grad());
  });
  b.register_post_accumulate_grad_hook([&](Tensor& p) {
    ++b_calls;
    b_seen = values(p.grad());
  });
  unused.register_post_accumulate_grad_hook([&](Tensor&) { ++unused_calls; });

  // w and b are used by the first op and again by the last, far apart on the tape.
  const auto loss = [&] { return sum(linear(tinynet::tanh(linear(x, w, b)), w, b)); };
  loss().backward();
  CHECK(w_calls == 1);
  CHECK(b_calls == 1);
  CHECK(unused_calls == 0);
  check_close(w_seen, values(w.grad()), 0.0);
  check_close(b_seen, values(b.grad()), 0.0);

  loss().backward();
  CHECK(w_calls == 2);
  CHECK(b_calls == 2);
  check_close(w_seen, values(w.grad()), 0.0);

  // Both operands of one op are the same leaf: still one call, with both contributions in.
  Tensor v = random_input({4}, 23);
  int v_calls = 0;
  std::vector<double> v_seen;
  v.register_post_accumulate_grad_hook([&](Tensor& p) {
    ++v_calls;
    v_seen = values(p.grad());
  });
  sum(mul(v, v)).backward();
  CHECK(v_calls == 1);
  std::vector<double> two_v;
  for (double e : values(v)) two_v.push_back(2 * e);
  check_close(v_seen, two_v, 1e-15);

  CHECK_THROWS_AS(Tensor(mul(w, 2.0)).register_post_accumulate_grad_hook([](Tensor&) {}), Error);
  CHECK_THROWS_WITH(x.register_post_accumulate_grad_hook([](Tensor&) {}),
                    Catch::Contains("leaf tensor that requires grad"));
}

// ---- dlib-style sentinel: backward adds into the gradient it is handed -------------

namespace {

struct Family {
  std::string name;
  std::function<Tensor(std::span<const Tensor>)> fn;
  std::vector<Tensor> inputs;
};

Tensor int_targets(std::initializer_list<std::int64_t> t) { return tensor<std::int64_t>(t); }

std::vector<Family> op_families() {
  const Tensor t3 = int_targets({2, 0, 1});
  return {
      {"add (broadcast)",
       [](auto in) { return add(in[0], in[1]); },
       {random_input({2, 3, 4}, 1), random_input({3, 1}, 2)}},
      {"sub", [](auto in) { return sub(in[0], in[1]); }, {random_input({3, 4}, 3), random_input({3, 4}, 4)}},
      {"mul (channel)",
       [](auto in) { return mul(in[0], in[1]); },
       {random_input({2, 3, 2, 2}, 5), random_input({3, 1, 1}, 6)}},
      {"mul x*x", [](auto in) { return mul(in[0], in[0]); }, {random_input({5}, 7)}},
      {"div (trailing)",
       [](auto in) { return div(in[0], in[1]); },
       {random_input({2, 3}, 8), away_from_zero({3}, 9, 0.5)}},
      {"neg", [](auto in) { return neg(in[0]); }, {random_input({4}, 10)}},
      {"relu", [](auto in) { return relu(in[0]); }, {away_from_zero({3, 3}, 11)}},
      {"sigmoid", [](auto in) { return sigmoid(in[0]); }, {random_input({3, 3}, 12)}},
      {"tanh", [](auto in) { return tinynet::tanh(in[0]); }, {random_input({3, 3}, 13)}},
      {"exp", [](auto in) { return tinynet::exp(in[0]); }, {random_input({3, 3}, 14)}},
      {"log", [](auto in) { return tinynet::log(in[0]); }, {random_input({3, 3}, 15, true, 0.5, 2.0)}},
      {"pow", [](auto in) { return tinynet::pow(in[0], 3); }, {random_input({3, 3}, 16)}},
      {"scalar ops", [](auto in) { return (2.0 - in[0] * 3.0) / 4.0 + 1.0; }, {random_input({3, 3}, 17)}},
      {"sum", [](auto in) { return sum(in[0]); }, {random_input({2, 3}, 18)}},
      {"sum dim keepdim", [](auto in) { return sum(in[0], 1, true); }, {random_input({2, 3, 4}, 19)}},
      {"mean dim", [](auto in) { return mean(in[0], 0); }, {random_input({2, 3, 4}, 20)}},
      {"view + flatten",
       [](auto in) {
         return in[0].view({4, -1}).flatten();
       },
       {random_input({2, 3, 2}, 21)}},
      {"linear",
       [](auto in) { return linear(in[0], in[1], in[2]); },
       {random_input({3, 4}, 22), random_input({5, 4}, 23), random_input({5}, 24)}},
      {"matmul", [](auto in) { return matmul(in[0], in[1]); }, {random_input({3, 4}, 25), random_input({4, 2}, 26)}},
      {"matmul a*a", [](auto in) { return matmul(in[0], in[0]); }, {random_input({3, 3}, 39)}},
      {"conv2d",
       [](auto in) { return conv2d(in[0], in[1], in[2], 2, 1); },
       {random_input({2, 3, 5, 6}, 27), random_input({4, 3, 3, 3}, 28), random_input({4}, 29)}},
      {"max_pool2d", [](auto in) { return max_pool2d(in[0], 3, 2, 1); }, {distinct_values({2, 2, 5, 5}, 30)}},
      {"avg_pool2d", [](auto in) { return avg_pool2d(in[0], 3, 1, 1); }, {random_input({2, 2, 4, 5}, 31)}},
      {"dropout",
       [](auto in) {
         Generator gen(1);
         return dropout(in[0], 0.5, true, gen);
       },
       {random_input({4, 5}, 32)}},
      {"dropout2d",
       [](auto in) {
         Generator gen(2);
         return dropout2d(in[0], 0.5, true, gen);
       },
       {random_input({2, 4, 3, 3}, 33)}},
      {"batch_norm (training)",
       [](auto in) { return batch_norm(in[0], Tensor(), Tensor(), in[1], in[2], true); },
       {random_input({3, 2, 2, 3}, 45), random_input({2}, 46), random_input({2}, 47)}},
      {"batch_norm (eval)",
       [](auto in) {
         const Tensor mean = full({2}, 0.1, {.dtype = DType::float64}), var = full({2}, 1.5, {.dtype = DType::float64});
         return batch_norm(in[0], mean, var, in[1], in[2], false);
       },
       {random_input({3, 2, 2, 3}, 48), random_input({2}, 49), random_input({2}, 50)}},
      {"softmax", [](auto in) { return softmax(in[0], 1); }, {random_input({2, 3, 4}, 34)}},
      {"log_softmax", [](auto in) { return log_softmax(in[0], -1); }, {random_input({3, 5}, 35)}},
      {"nll_loss", [t3](auto in) { return nll_loss(in[0], t3); }, {random_input({3, 4}, 36)}},
      {"nll_loss none", [t3](auto in) { return nll_loss(in[0], t3, Reduction::none); }, {random_input({3, 4}, 37)}},
      {"cross_entropy", [t3](auto in) { return cross_entropy(in[0], t3, Reduction::sum); }, {random_input({3, 4}, 38)}},
      {"where",
       [](auto in) { return where(gt(in[0], 0.0), in[0], in[1]); },
       {away_from_zero({3, 4}, 51), random_input({4}, 52)}},
      {"clamp", [](auto in) { return clamp(in[0], -0.3, 0.4); }, {distinct_values({3, 4}, 53)}},
      {"abs", [](auto in) { return tinynet::abs(in[0]); }, {away_from_zero({3, 4}, 54)}},
      {"sqrt", [](auto in) { return tinynet::sqrt(in[0]); }, {random_input({3, 4}, 55, true, 0.5, 2.0)}},
      {"maximum (broadcast)",
       [](auto in) { return maximum(in[0], in[1]); },
       {distinct_values({3, 4}, 56), random_input({4}, 57)}},
      {"minimum x, x", [](auto in) { return minimum(in[0], in[0]); }, {random_input({5}, 58)}},
      {"amax dim", [](auto in) { return amax(in[0], 1, true); }, {distinct_values({2, 3, 4}, 59)}},
      {"amin all", [](auto in) { return amin(in[0]); }, {distinct_values({2, 3}, 60)}},
      {"cat (one input twice)",
       [](auto in) {
         return cat({in[0], in[1], in[0]}, 1);
       },
       {random_input({2, 3}, 61), random_input({2, 1}, 62)}},
      {"stack",
       [](auto in) {
         return stack({in[0], in[1]}, 2);
       },
       {random_input({2, 3}, 63), random_input({2, 3}, 64)}},
      {"narrow + select", [](auto in) { return in[0].narrow(1, 1, 2).select(0, 1); }, {random_input({3, 4}, 65)}},
      {"index_select (repeated index)",
       [](auto in) {
         return index_select(in[0], 0, tensor<std::int64_t>({2, 0, 2}));
       },
       {random_input({3, 4}, 66)}},
      {"permute + transpose",
       [](auto in) {
         return in[0].permute({2, 0, 1}).transpose(0, 1);
       },
       {random_input({2, 3, 4}, 67)}},
      {"unsqueeze + squeeze", [](auto in) { return in[0].unsqueeze(1).squeeze(2); }, {random_input({3, 1, 4}, 68)}},
  };
}

/// Leaves freed blocks full of NaN in the allocator's cache for tensors of each shape, so
/// that a gradient backward allocates but never writes shows up as NaN.
void poison_cache(const std::vector<Tensor>& like) {
  std::vector<Tensor> blocks;
  for (const Tensor& t : like)
    for (int i = 0; i < 8; ++i)
      blocks.push_back(full(t.shape(), std::numeric_limits<double>::quiet_NaN(), {.dtype = DType::float64}));
}

}  // namespace

TEST_CASE("tape: every op adds into a pre-filled gradient (sentinel)", "[autograd][sentinel]") {
  for (Family& f : op_families()) {
    INFO(f.name);
    const Tensor probe = f.fn(f.inputs);
    Generator gen(99);
    const Tensor seed = randn(probe.shape(), {.dtype = DType::float64}, gen);

    // A fresh run: the gradients each op writes on its own.
    for (Tensor& t : f.inputs) t.set_grad(Tensor());
    poison_cache(f.inputs);
    f.fn(f.inputs).backward(seed);
    std::vector<std::vector<double>> fresh;
    bool complete = true;
    for (const Tensor& t : f.inputs) {
      fresh.push_back(t.grad().defined() ? values(t.grad()) : std::vector<double>());
      CHECK(fresh.back().size() == static_cast<std::size_t>(t.numel()));
      CHECK(std::all_of(fresh.back().begin(), fresh.back().end(), [](double g) { return std::isfinite(g); }));
      complete = complete && fresh.back().size() == static_cast<std::size_t>(t.numel());
    }
    if (!complete) continue;  // reported above; the comparison below needs every gradient

    // Pre-fill each gradient with a known tensor S: the result must be S + fresh everywhere.
    std::vector<std::vector<double>> sentinels;
    for (std::size_t k = 0; k < f.inputs.size(); ++k) {
      const Tensor s = random_input(f.inputs[k].shape(), 1000 + k, false, 100.0, 200.0);
      sentinels.push_back(values(s));
      f.inputs[k].set_grad(s);
    }
    f.fn(f.inputs).backward(seed);
    for (std::size_t k = 0; k < f.inputs.size(); ++k) {
      INFO("input " << k);
      std::vector<double> expected;
      for (std::size_t i = 0; i < fresh[k].size(); ++i) expected.push_back(sentinels[k][i] + fresh[k][i]);
      check_close(f.inputs[k].grad(), expected, 1e-14);
    }
  }
}
