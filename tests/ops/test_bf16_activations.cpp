// bfloat16 activations: the elementwise activations, pooling, dropout, views and cast take
// bfloat16 tensors, compute each value in float and round once as they store it (PyTorch's
// CPU kernels for bfloat16 do the same). Each result is held to exactly that value: the
// inputs are chosen so that every float computation here is exact or is repeated in the
// same order, so nothing is left to a tolerance.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <tinynet/backend/cpu/isa.hpp>
#include <tinynet/tinynet.hpp>
#include <vector>

#include "ops/op_testing.hpp"
#include "thread_count_restorer.hpp"

using namespace tinynet;
using namespace tinynet::testing;

namespace {

/// Any tensor's values as doubles (exact for bfloat16, float and double).
std::vector<double> as_doubles(const Tensor& t) {
  std::vector<double> out(static_cast<std::size_t>(t.numel()));
  dispatch_all(t.dtype(), [&]<typename T>() {
    const T* p = t.data<T>();
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(p[i]);
  });
  return out;
}

/// The nearest bfloat16 to v (ties to even), as a double.
double bf16_of(double v) { return static_cast<double>(bfloat16(static_cast<float>(v))); }

/// A float32 leaf of multiples of 1/8 in [-4, 4): bfloat16 holds them exactly and sums of a
/// few of them are exact in float, so sums do not depend on their order.
Tensor eighths(const Shape& shape, std::uint64_t seed) {
  Generator gen(seed);
  Tensor t = uniform(shape, -4.0, 4.0, {}, gen);
  float* p = t.data<float>();
  for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = std::floor(p[i] * 8.0f) / 8.0f;
  return t.requires_grad_();
}

/// A float32 leaf of values that need all of float's bits (rounding them to bfloat16 does
/// something).
Tensor full_precision(const Shape& shape, std::uint64_t seed) {
  Generator gen(seed);
  return uniform(shape, -2.0, 2.0, {.requires_grad = true}, gen);
}

/// sum(cast(y, float32) * v): a loss whose gradient with respect to y is v, rounded to
/// y's bfloat16 by the cast's backward.
Tensor weighted_sum(const Tensor& y, const Tensor& v) { return sum(mul(cast(y, DType::float32), v)); }

}  // namespace

TEST_CASE("cast: rounds to bfloat16 to nearest even, and its gradient comes back converted", "[ops][bf16]") {
  const Tensor x = full_precision({300}, 1);
  const Tensor y = cast(x, DType::bfloat16);
  REQUIRE(y.dtype() == DType::bfloat16);
  CHECK(y.requires_grad());
  const auto vx = values(x), vy = as_doubles(y);
  for (std::size_t i = 0; i < vx.size(); ++i) REQUIRE(vy[i] == bf16_of(vx[i]));
  CHECK(cast(y, DType::bfloat16).is_same(y));

  const Tensor v = full_precision({300}, 2).detach();
  weighted_sum(y, v).backward();
  REQUIRE(x.grad().dtype() == DType::float32);
  const auto g = values(x.grad()), vv = values(v);
  for (std::size_t i = 0; i < g.size(); ++i) REQUIRE(g[i] == bf16_of(vv[i]));

  CHECK_THROWS_AS(cast(x, DType::int64), TypeError);
}

TEST_CASE("relu and sigmoid on bfloat16: the float value rounded once, both passes", "[ops][bf16]") {
  const Tensor x = full_precision({1000}, 3);
  const Tensor x16 = cast(x, DType::bfloat16);
  const Tensor v = full_precision({1000}, 4).detach();
  const auto in = as_doubles(x16), vv = values(v);

  SECTION("relu") {
    const Tensor y = relu(x16);
    REQUIRE(y.dtype() == DType::bfloat16);
    const auto out = as_doubles(y);
    for (std::size_t i = 0; i < in.size(); ++i) REQUIRE(out[i] == (in[i] > 0 ? in[i] : 0.0));
    weighted_sum(y, v).backward();
    const auto g = values(x.grad());
    for (std::size_t i = 0; i < in.size(); ++i) REQUIRE(g[i] == (in[i] > 0 ? bf16_of(vv[i]) : 0.0));
  }
  SECTION("sigmoid") {
    const Tensor y = sigmoid(x16);
    const auto out = as_doubles(y);
    for (std::size_t i = 0; i < in.size(); ++i) {
      const float s = 1.0f / (1.0f + std::exp(-static_cast<float>(in[i])));
      REQUIRE(out[i] == bf16_of(s));
    }
    weighted_sum(y, v).backward();
    const auto g = values(x.grad());
    for (std::size_t i = 0; i < in.size(); ++i) {
      const auto yi = static_cast<float>(out[i]);
      REQUIRE(g[i] == bf16_of(static_cast<float>(bf16_of(vv[i])) * (yi * (1.0f - yi))));
    }
  }
}

TEST_CASE("max_pool2d and avg_pool2d on bfloat16 match float32 on the same values, rounded", "[ops][bf16]") {
  ThreadCountRestorer restore;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    // 2x2 stride 2 (no overlap), 3x3 stride 2 with padding 1 (windows overlap: gradients
    // add up), on odd planes, one wider than a vector of outputs.
    for (auto [k, s, p, width] : {std::tuple{2, 2, 0, 11}, std::tuple{2, 2, 0, 37}, std::tuple{3, 2, 1, 11}}) {
      INFO(threads << " threads, kernel " << k << " stride " << s << " padding " << p << " width " << width);
      const Tensor x = eighths({2, 3, 9, width}, 5);
      const Tensor x16 = cast(x, DType::bfloat16);
      const Tensor xf = x16.detach().to(DType::float32).requires_grad_();

      const Tensor y16 = max_pool2d(x16, k, s, p), yf = max_pool2d(xf, k, s, p);
      REQUIRE(y16.dtype() == DType::bfloat16);
      CHECK(as_doubles(y16) == values(yf));
      const Tensor w = eighths(yf.shape(), 7).detach();
      weighted_sum(y16, w).backward();
      sum(mul(yf, w)).backward();
      // Each gradient is a sum of at most four multiples of 1/8: exact in float, rounded once.
      const auto g16 = values(x.grad()), gf = values(xf.grad());
      for (std::size_t i = 0; i < g16.size(); ++i) REQUIRE(g16[i] == bf16_of(gf[i]));

      const Tensor a = eighths({2, 3, 9, 11}, 8);
      const Tensor a16 = cast(a, DType::bfloat16);
      const Tensor af = a16.detach().to(DType::float32).requires_grad_();
      const Tensor z16 = avg_pool2d(a16, k, s, p), zf = avg_pool2d(af, k, s, p);
      REQUIRE(z16.dtype() == DType::bfloat16);
      const auto vz16 = as_doubles(z16), vzf = values(zf);
      for (std::size_t i = 0; i < vzf.size(); ++i) REQUIRE(vz16[i] == bf16_of(vzf[i]));
      const Tensor wz = eighths(zf.shape(), 9).detach();
      weighted_sum(z16, wz).backward();
      sum(mul(zf, wz)).backward();
      const auto ga16 = values(a.grad()), gaf = values(af.grad());
      // float32 adds each window's share in turn, as the bfloat16 path's float plane does.
      for (std::size_t i = 0; i < ga16.size(); ++i) REQUIRE(ga16[i] == bf16_of(gaf[i]));
    }
  }
}

TEST_CASE("dropout on bfloat16: float32's mask, each kept value scaled in float and rounded", "[ops][bf16]") {
  for (double p : {0.25, 0.5}) {
    INFO("p = " << p);
    const Tensor x = full_precision({64, 300}, 10);
    const Tensor x16 = cast(x, DType::bfloat16);
    const Tensor xf = x16.detach().to(DType::float32).requires_grad_();
    Generator g1(11), g2(11);
    const Tensor y16 = dropout(x16, p, true, g1), yf = dropout(xf, p, true, g2);
    REQUIRE(y16.dtype() == DType::bfloat16);
    const auto a = as_doubles(y16), b = values(yf);
    std::size_t kept = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      REQUIRE(a[i] == bf16_of(b[i]));
      kept += b[i] != 0.0;
    }
    CHECK(kept > a.size() / 4);
    const Tensor v = full_precision(yf.shape(), 12).detach();
    weighted_sum(y16, v).backward();
    sum(mul(yf, cast(cast(v, DType::bfloat16), DType::float32))).backward();
    const auto g16 = values(x.grad()), gf = values(xf.grad());
    for (std::size_t i = 0; i < g16.size(); ++i) REQUIRE(g16[i] == bf16_of(gf[i]));
  }
}

TEST_CASE("view and flatten of bfloat16 carry the gradient back", "[ops][bf16]") {
  const Tensor x = full_precision({4, 3, 5}, 13);
  const Tensor x16 = cast(x, DType::bfloat16);
  const Tensor y = flatten(x16, 1);
  REQUIRE(y.dtype() == DType::bfloat16);
  REQUIRE(y.shape() == Shape{4, 15});
  const Tensor v = full_precision({4, 15}, 14).detach();
  weighted_sum(y, v).backward();
  const auto g = values(x.grad()), vv = values(v);
  for (std::size_t i = 0; i < g.size(); ++i) REQUIRE(g[i] == bf16_of(vv[i]));
}

TEST_CASE("ops without bfloat16 kernels run in float32: bfloat16 results rounded once, float32 under autocast",
          "[ops][bf16]") {
  const Tensor x = full_precision({6, 10}, 15), z = full_precision({6, 10}, 16);
  const Tensor target = from_vector<std::int64_t>({0, 3, 9, 2, 2, 7}, {6});
  const auto through_float = [&](const std::function<Tensor(const Tensor&, const Tensor&)>& f, bool under_autocast) {
    Tensor(x).set_grad(Tensor());
    Tensor(z).set_grad(Tensor());
    const Tensor a16 = cast(x, DType::bfloat16), b16 = cast(z, DType::bfloat16);
    const Tensor af = a16.detach().to(DType::float32).requires_grad_(),
                 bf = b16.detach().to(DType::float32).requires_grad_();
    Tensor y16;
    {
      autocast scope(DeviceType::cpu, DType::bfloat16, under_autocast);
      y16 = f(a16, b16);
    }
    const Tensor yf = f(af, bf);
    REQUIRE(y16.dtype() == (under_autocast ? DType::float32 : DType::bfloat16));
    const auto v16 = as_doubles(y16), vf = values(yf);
    for (std::size_t i = 0; i < vf.size(); ++i) REQUIRE(v16[i] == (under_autocast ? vf[i] : bf16_of(vf[i])));
    // The gradient: float32's, rounded to bfloat16 where it enters the bfloat16 tensors.
    const Tensor w = full_precision(yf.shape(), 17).detach();
    sum(mul(cast(y16, DType::float32), w)).backward();
    sum(mul(yf, under_autocast ? w : cast(cast(w, DType::bfloat16), DType::float32))).backward();
    for (auto [g16, gf] : {std::pair{x.grad(), af.grad()}, std::pair{z.grad(), bf.grad()}}) {
      if (!gf.defined()) continue;
      const auto a = values(g16), b = values(gf);
      for (std::size_t i = 0; i < a.size(); ++i) REQUIRE(a[i] == bf16_of(b[i]));
    }
  };
  for (bool under_autocast : {false, true}) {
    INFO((under_autocast ? "under autocast" : "outside autocast"));
    {
      INFO("log_softmax");
      through_float([](const Tensor& a, const Tensor&) { return log_softmax(a, 1); }, under_autocast);
    }
    {
      INFO("softmax");
      through_float([](const Tensor& a, const Tensor&) { return softmax(a, 0); }, under_autocast);
    }
    {
      INFO("sum");
      through_float([](const Tensor& a, const Tensor&) { return sum(a, 1); }, under_autocast);
    }
    {
      INFO("mean");
      through_float([](const Tensor& a, const Tensor&) { return mean(a); }, under_autocast);
    }
    {
      INFO("nll_loss");
      through_float([&](const Tensor& a, const Tensor&) { return nll_loss(a, target); }, under_autocast);
    }
  }
  // Binary ops run in float32 under autocast too (not on its float32 list): two bfloat16
  // operands give bfloat16.
  const Tensor p = cast(x, DType::bfloat16), q = cast(z, DType::bfloat16);
  {
    autocast scope(DeviceType::cpu, DType::bfloat16);
    CHECK(mul(p, q).dtype() == DType::bfloat16);
  }
  const auto vp = as_doubles(p), vq = as_doubles(q), sum16 = as_doubles(add(p, q)), prod = as_doubles(mul(p, q));
  for (std::size_t i = 0; i < vp.size(); ++i) {
    REQUIRE(sum16[i] == bf16_of(static_cast<float>(vp[i]) + static_cast<float>(vq[i])));
    REQUIRE(prod[i] == bf16_of(static_cast<float>(vp[i]) * static_cast<float>(vq[i])));
  }
  // One bfloat16 operand beside float32 gives float32, and float64 float64.
  const Tensor mixed = add(p, z);
  REQUIRE(mixed.dtype() == DType::float32);
  const auto vm = values(mixed), vz = values(z);
  for (std::size_t i = 0; i < vp.size(); ++i)
    REQUIRE(vm[i] == static_cast<double>(static_cast<float>(vp[i]) + static_cast<float>(vz[i])));
  CHECK(sub(z.to(DType::float64), p).dtype() == DType::float64);
  CHECK(argmax(p, 1).dtype() == DType::int64);
  CHECK(values(argmax(p, 1).to(DType::float64)) == values(argmax(p.to(DType::float32), 1).to(DType::float64)));
}

TEST_CASE(
    "batch_norm under autocast reads a bfloat16 input as it is, batch_norm_relu too: float32's values, its gradient "
    "rounded once",
    "[ops][bf16][autocast]") {
  // The backend reads the bfloat16 input itself at every level (ops_tests@avx2 and
  // @baseline run this too): the result is float32's on the input's values, bit for bit,
  // and the input's gradient float32's rounded once.
  // Shapes with planes shorter than a vector, with vector tails, and of whole vectors.
  // batch_norm_relu too: float32's relu(batch_norm) on the same values.
  for (const Shape& shape : {Shape{6, 4}, Shape{3, 5, 7, 9}, Shape{2, 16, 12, 12}}) {
    for (const int k : {0, 1, 2, 3}) {
      const bool training = k < 2, fused = k % 2 == 1;
      INFO("shape " << shape << (training ? ", training" : ", evaluation") << (fused ? ", batch_norm_relu" : ""));
      const auto bn16 = fused ? batch_norm_relu : batch_norm;
      const auto bnf = [&](auto&&... a) { return fused ? relu(batch_norm(a...)) : batch_norm(a...); };
      const std::int64_t c = shape[1];
      const Tensor x = full_precision(shape, 21), x16 = cast(x, DType::bfloat16);
      const Tensor xf = x16.detach().to(DType::float32).requires_grad_();
      const Tensor gamma = full_precision({c}, 22), beta = full_precision({c}, 23);
      const Tensor gamma_f = gamma.detach().requires_grad_(), beta_f = beta.detach().requires_grad_();
      Generator gen(24);
      const Tensor stats_mean = uniform({c}, -0.5, 0.5, {}, gen), stats_var = uniform({c}, 0.5, 2.0, {}, gen);
      Tensor rm16 = stats_mean.clone(), rv16 = stats_var.clone(), rmf = stats_mean.clone(), rvf = stats_var.clone();
      Tensor y16;
      {
        autocast scope(DeviceType::cpu, DType::bfloat16);
        y16 = bn16(x16, rm16, rv16, gamma, beta, training, 0.1, 1e-5);
      }
      const Tensor yf = bnf(xf, rmf, rvf, gamma_f, beta_f, training, 0.1, 1e-5);
      REQUIRE(y16.dtype() == DType::float32);
      // batch_norm's node takes x16 itself, not a float32 copy.
      CHECK(y16.grad_fn()->next[0].dtype == DType::bfloat16);
      CHECK(values(y16) == values(yf));
      CHECK(values(rm16) == values(rmf));
      CHECK(values(rv16) == values(rvf));
      // The input also feeds a second term, so that one of the two gradients is added to
      // the other in bfloat16 (the second term's gradient, eighths, is exact there); x's
      // gradient is x16's, converted exactly.
      const Tensor w = full_precision(shape, 25).detach(), w2 = eighths(shape, 26).detach();
      add(sum(mul(y16, w)), sum(mul(cast(x16, DType::float32), w2))).backward();
      sum(mul(yf, w)).backward();
      const auto g16 = values(x.grad()), gf = values(xf.grad()), v2 = values(w2);
      for (std::size_t i = 0; i < gf.size(); ++i) REQUIRE(g16[i] == bf16_of(bf16_of(gf[i]) + v2[i]));
      CHECK(values(gamma.grad()) == values(gamma_f.grad()));
      CHECK(values(beta.grad()) == values(beta_f.grad()));
    }
  }
  // Its statistics and parameters stay float32: float64 ones are an error naming them.
  const Tensor x16 = cast(full_precision({2, 3, 4, 4}, 27), DType::bfloat16);
  autocast scope(DeviceType::cpu, DType::bfloat16);
  CHECK_THROWS_AS(batch_norm(x16, Tensor(), Tensor(), ones({3}, {.dtype = DType::float64})), TypeError);
}

TEST_CASE("conv2d, conv2d_relu, linear and matmul under autocast take bfloat16 activations and return bfloat16",
          "[ops][bf16][autocast]") {
  // A bfloat16 input's values are what autocast would round a float32 input to, so the
  // products are the same; the output (and the input's gradient) is that result rounded.
  // conv2d returns bfloat16 for a float32 input too (its kernels round the output as they
  // store it at every level, and from the avx512 level up read a bfloat16 input as it is
  // where they can: Winograd, and stride-1 unpadded columns, of channel pairs with
  // vdpbf16ps, else widened): the same values for both inputs, whichever way each takes.
  ThreadCountRestorer restore;
  Generator gen(18);
  const Tensor w = uniform({6, 3, 3, 3}, -0.5, 0.5, {.requires_grad = true}, gen);
  const Tensor b = uniform({6}, -0.5, 0.5, {.requires_grad = true}, gen);
  const Tensor w16 = uniform({24, 16, 3, 3}, -0.5, 0.5, {.requires_grad = true}, gen);  // Winograd
  const Tensor w20 = uniform({50, 20, 5, 5}, -0.5, 0.5, {.requires_grad = true}, gen);  // LeNet's conv2
  const Tensor b20 = uniform({50}, -0.5, 0.5, {.requires_grad = true}, gen);
  const Tensor lw = uniform({5, 12}, -0.5, 0.5, {.requires_grad = true}, gen);
  const Tensor lw13 = uniform({5, 13}, -0.5, 0.5, {.requires_grad = true}, gen);       // odd: cast to float32
  const Tensor fc1 = uniform({128, 9216}, -0.01, 0.01, {.requires_grad = true}, gen);  // NET's fc1
  const Tensor fc1_b = uniform({128}, -0.01, 0.01, {.requires_grad = true}, gen);
  const std::vector<const Tensor*> params = {&w, &b, &w16, &w20, &b20, &lw, &lw13, &fc1, &fc1_b};
  const auto check = [&](const std::function<Tensor(const Tensor&)>& f, const Shape& in_shape, std::uint64_t seed,
                         DType float_input_result) {
    const Tensor x = full_precision(in_shape, seed);
    const Tensor x16 = cast(x, DType::bfloat16);
    const Tensor xf = x16.detach().to(DType::float32).requires_grad_();
    Tensor y16, yf;
    {
      autocast scope;
      y16 = f(x16);
      yf = f(xf);
    }
    REQUIRE(y16.dtype() == DType::bfloat16);
    REQUIRE(yf.dtype() == float_input_result);
    const auto a = as_doubles(y16), e = as_doubles(yf);
    for (std::size_t i = 0; i < e.size(); ++i) REQUIRE(a[i] == bf16_of(e[i]));
    const Tensor v = full_precision(yf.shape(), seed + 1).detach();
    const Tensor v16 = cast(cast(v, DType::bfloat16), DType::float32);
    for (const Tensor* p : params) Tensor(*p).set_grad(Tensor());
    weighted_sum(y16, v).backward();
    std::vector<std::vector<double>> grads;
    for (const Tensor* p : params) grads.push_back(p->grad().defined() ? as_doubles(p->grad()) : std::vector<double>{});
    for (const Tensor* p : params) Tensor(*p).set_grad(Tensor());
    weighted_sum(yf, v16).backward();
    REQUIRE(x.grad().dtype() == DType::float32);  // through the cast to bfloat16
    REQUIRE(xf.grad().dtype() == DType::float32);
    const auto gx = as_doubles(x.grad()), gxf = as_doubles(xf.grad());
    for (std::size_t i = 0; i < gx.size(); ++i) REQUIRE(gx[i] == bf16_of(gxf[i]));
    std::size_t k = 0;
    for (const Tensor* p : params) {  // the parameters' float32 gradients: the same sums
      CHECK(grads[k] == (p->grad().defined() ? as_doubles(p->grad()) : std::vector<double>{}));
      ++k;
    }
  };
  // Which way an op ran: its node takes the bfloat16 input itself, or a float32 copy.
  const auto takes_input = [](const std::function<Tensor(const Tensor&)>& f, const Shape& in_shape) {
    const Tensor x16 = cast(full_precision(in_shape, 50), DType::bfloat16);
    autocast scope;
    return f(x16).grad_fn()->next[0].dtype == DType::bfloat16;
  };
  const bool vector_level = backend::cpu::isa() >= backend::cpu::Isa::avx2;
  const bool native = backend::cpu::isa() >= backend::cpu::Isa::avx512_bf16;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    INFO(threads << " threads");
    {
      INFO("conv2d, padded, 3 channels (a bfloat16 input cast to float32 for the columns)");
      check([&](const Tensor& x) { return conv2d(x, w, b, 1, 1); }, {2, 3, 7, 6}, 30, DType::bfloat16);
    }
    {
      INFO("conv2d_relu");
      check([&](const Tensor& x) { return conv2d_relu(x, w, b); }, {2, 3, 8, 8}, 32, DType::bfloat16);
    }
    {
      INFO("conv2d_relu through Winograd, padded");
      check([&](const Tensor& x) { return conv2d_relu(x, w16, Tensor(), 1, 1); }, {3, 16, 9, 10}, 40, DType::bfloat16);
    }
    {
      INFO("conv2d through Winograd, NET's conv2 input");
      check([&](const Tensor& x) { return conv2d(x, w16); }, {2, 16, 26, 26}, 42, DType::bfloat16);
    }
    {
      INFO("conv2d_relu, LeNet's conv2 (columns of channel pairs, or widened)");
      CHECK(takes_input([&](const Tensor& x) { return conv2d_relu(x, w20, b20); }, {5, 20, 12, 12}) ==
            (backend::cpu::isa() >= backend::cpu::Isa::avx512));
      check([&](const Tensor& x) { return conv2d_relu(x, w20, b20); }, {5, 20, 12, 12}, 44, DType::bfloat16);
    }
    {
      INFO("linear");
      // From the avx2 level up the kernels take the bfloat16 input (widened for the float32
      // kernels); vdpbf16ps reads it in pairs, so an odd feature count is cast there.
      CHECK(takes_input([&](const Tensor& x) { return linear(x, lw); }, {4, 12}) == vector_level);
      CHECK(takes_input([&](const Tensor& x) { return linear(x, lw13); }, {3, 13}) == (vector_level && !native));
      check([&](const Tensor& x) { return linear(x, lw); }, {4, 12}, 34, DType::float32);
    }
    {
      INFO("linear, 13 input features (with vdpbf16ps a bfloat16 input cast to float32 for the products)");
      check([&](const Tensor& x) { return linear(x, lw13); }, {3, 13}, 46, DType::float32);
    }
    {
      INFO("linear with a bias, NET's fc1 (its products split over the threads)");
      check([&](const Tensor& x) { return linear(x, fc1, fc1_b); }, {64, 9216}, 48, DType::float32);
    }
    {
      INFO("matmul");
      check([&](const Tensor& x) { return matmul(x, lw.detach().to(DType::float64).to(DType::float32)); }, {3, 5}, 36,
            DType::float32);
    }
  }
  // Outside autocast they refuse bfloat16, naming autocast as the way.
  const Tensor x16 = cast(full_precision({2, 3, 5, 5}, 38), DType::bfloat16);
  CHECK_THROWS_WITH(conv2d(x16, w), Catch::Contains("conv2d") && Catch::Contains("autocast"));
}
