#include <catch2/catch.hpp>
#include <cmath>
#include <tinynet/tinynet.hpp>

using namespace tinynet;
using namespace tinynet::nn;

TEST_CASE("init: Linear and Conv2d follow PyTorch's default uniform bounds", "[nn][init]") {
  manual_seed(0);
  Linear<256> fc(400);
  Conv2d<64, 5> conv(8);
  auto check_uniform = [](const Tensor& t, double bound) {
    double mn = 1e9, mx = -1e9, sq = 0;
    for (std::int64_t i = 0; i < t.numel(); ++i) {
      const double v = t.data<float>()[i];
      mn = std::min(mn, v);
      mx = std::max(mx, v);
      sq += v * v;
    }
    CHECK(mn >= -bound);
    CHECK(mx <= bound);
    CHECK(mn < -0.95 * bound);  // the draws fill the interval
    CHECK(mx > 0.95 * bound);
    // U(-b, b) has variance b^2 / 3; the sample estimate is within a few percent for these sizes.
    CHECK(sq / static_cast<double>(t.numel()) == Approx(bound * bound / 3).epsilon(0.05));
  };
  check_uniform(fc.weight(), 1.0 / std::sqrt(400.0));
  check_uniform(fc.bias(), 1.0 / std::sqrt(400.0));
  check_uniform(conv.weight(), 1.0 / std::sqrt(8.0 * 25));
}

TEST_CASE("init: the same seed gives the same weights", "[nn][init]") {
  manual_seed(42);
  Linear<10> a(20);
  manual_seed(42);
  Linear<10> b(20);
  for (std::int64_t i = 0; i < a.weight().numel(); ++i)
    CHECK(a.weight().data<float>()[i] == b.weight().data<float>()[i]);
  Linear<10> c(20);
  CHECK(a.weight().data<float>()[0] != c.weight().data<float>()[0]);
}

TEST_CASE("layers: constructor arguments are validated", "[nn][errors]") {
  CHECK_THROWS_AS(Linear<4>(0), ValueError);
  CHECK_THROWS_AS((Linear<4, 8>(9)), ValueError);
  CHECK_THROWS_AS((Conv2d<4, 3>(-1)), ValueError);
  CHECK_THROWS_AS(Dropout(1.5), ValueError);
  CHECK_THROWS_AS(Dropout2d(-0.1), ValueError);
  CHECK_THROWS_AS(BatchNorm2d(0), ValueError);
  Linear<4> fc(8);
  CHECK_THROWS_AS(fc(zeros({2, 7})), ShapeError);
}

TEST_CASE("BatchNorm2d: running statistics in training, used in eval", "[nn][batchnorm]") {
  manual_seed(9);
  BatchNorm2d bn(3);
  const Tensor x = randn({4, 3, 5, 5}) * 2.0 + 1.0;
  const Tensor y = bn(x);
  const StateDict sd = bn.state_dict();
  for (int c = 0; c < 3; ++c) {
    double s = 0, s2 = 0;
    for (int n = 0; n < 4; ++n)
      for (int i = 0; i < 25; ++i) s += x.data<float>()[(n * 3 + c) * 25 + i];
    const double m = s / 100;
    for (int n = 0; n < 4; ++n)
      for (int i = 0; i < 25; ++i) {
        const double d = x.data<float>()[(n * 3 + c) * 25 + i] - m;
        s2 += d * d;
      }
    CHECK(sd.at("running_mean").data<float>()[c] == Approx(0.1 * m).epsilon(1e-5));
    CHECK(sd.at("running_var").data<float>()[c] == Approx(0.9 + 0.1 * s2 / 99).epsilon(1e-5));
    // training output: zero mean, unit (biased) variance per channel
    double ys = 0;
    for (int n = 0; n < 4; ++n)
      for (int i = 0; i < 25; ++i) ys += y.data<float>()[(n * 3 + c) * 25 + i];
    CHECK(ys / 100 == Approx(0).margin(1e-5));
  }
  CHECK(sd.integer("num_batches_tracked") == 1);

  bn.eval();
  NoGradGuard no_grad;
  const Tensor ye = bn(x);
  const float rm = sd.at("running_mean").data<float>()[1], rv = sd.at("running_var").data<float>()[1];
  CHECK(ye.data<float>()[25] == Approx((x.data<float>()[25] - rm) / std::sqrt(rv + 1e-5)).epsilon(1e-5));
  CHECK(sd.integer("num_batches_tracked") == 1);
}

TEST_CASE("BatchNorm2d absorbs the ReLU after it in Sequential: batch_norm_relu, the same values and state",
          "[nn][batchnorm]") {
  manual_seed(10);
  Sequential<Input<3, 5, 5>, BatchNorm2d, ReLU> fused;
  BatchNorm2d alone(3);
  const Tensor x = randn({4, 3, 5, 5}) * 2.0 + 1.0;
  for (bool training : {true, false}) {
    INFO((training ? "training" : "evaluation"));
    fused.train(training);
    alone.train(training);
    const Tensor y = fused(x), expected = relu(alone(x));
    CHECK(y.grad_fn()->name() == std::string("batch_norm_relu"));
    const auto yv = y.contiguous(), ev = expected.contiguous();
    CHECK(std::equal(yv.data<float>(), yv.data<float>() + yv.numel(), ev.data<float>()));
    const StateDict a = fused.state_dict(), b = alone.state_dict();
    for (const char* buffer : {"running_mean", "running_var"}) {
      const Tensor& u = a.at(std::string("0.") + buffer);
      const Tensor& v = b.at(buffer);
      CHECK(std::equal(u.data<float>(), u.data<float>() + u.numel(), v.data<float>()));
    }
    CHECK(a.integer("0.num_batches_tracked") == b.integer("num_batches_tracked"));
    sum(mul(y, x)).backward();
    sum(mul(expected, x)).backward();
    const auto fused_params = fused.named_parameters(), alone_params = alone.named_parameters();
    REQUIRE(fused_params.size() == alone_params.size());
    for (std::size_t i = 0; i < fused_params.size(); ++i) {
      const Tensor g = fused_params[i].second.grad(), e = alone_params[i].second.grad();
      CHECK(std::equal(g.data<float>(), g.data<float>() + g.numel(), e.data<float>()));
    }
    fused.zero_grad();
    alone.zero_grad();
  }
}
