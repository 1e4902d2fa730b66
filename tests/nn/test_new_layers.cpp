// LeakyReLU, GELU, SiLU, Identity, AdaptiveAvgPool2d and BatchNorm1d as layers, alone, in
// Sequential (shapes and parameter counts at compile time) and in free-form modules; and the
// bias / affine options of Conv2d, Linear and BatchNorm, whose counts Sequential knows.

#include <catch2/catch.hpp>
#include <cmath>
#include <tinynet/tinynet.hpp>

#include "network_gradcheck.hpp"

using namespace tinynet;
using namespace tinynet::nn;

namespace {

std::vector<double> as_doubles(const Tensor& t) {
  const Tensor d = t.to(DType::float64).contiguous();
  return {d.data<double>(), d.data<double>() + d.numel()};
}

}  // namespace

TEST_CASE("activation layers apply their op with their settings", "[nn][activations]") {
  manual_seed(1);
  const Tensor x = randn({3, 5});
  CHECK(as_doubles(LeakyReLU()(x)) == as_doubles(leaky_relu(x, 0.01)));
  CHECK(as_doubles(LeakyReLU(0.3)(x)) == as_doubles(leaky_relu(x, 0.3)));
  CHECK(LeakyReLU(0.3).negative_slope() == 0.3);
  CHECK(as_doubles(GELU()(x)) == as_doubles(gelu(x)));
  CHECK(as_doubles(GELU("tanh")(x)) == as_doubles(gelu(x, "tanh")));
  CHECK(GELU("tanh").approximate() == "tanh");
  CHECK(as_doubles(SiLU()(x)) == as_doubles(silu(x)));
  CHECK(Identity()(x).shares_storage(x));
  CHECK_THROWS_WITH(GELU("exact"), Catch::Contains("GELU") && Catch::Contains("'exact'"));
}

TEST_CASE("AdaptiveAvgPool2d: any input to its output size; <1, 1> pools globally", "[nn][pool2d]") {
  const Tensor x = randn({2, 3, 7, 5});
  CHECK(as_doubles(AdaptiveAvgPool2d<3, 2>()(x)) == as_doubles(adaptive_avg_pool2d(x, {3, 2})));
  CHECK(AdaptiveAvgPool2d<4>()(x).shape() == Shape{2, 3, 4, 4});
  using Net = Sequential<Input<3, 9, 7>, Conv2d<8, 3>, AdaptiveAvgPool2d<1, 1>, Flatten, Linear<4>>;
  static_assert(std::is_same_v<Net::output_shape, Sample<4>>);
  static_assert(Net::parameter_count == 8 * 3 * 9 + 8 + 8 * 4 + 4);
  Net net;
  CHECK(net(randn({2, 3, 9, 7})).shape() == Shape{2, 4});
}

TEST_CASE("Sequential with the new layers: shapes, counts, gradcheck", "[nn][sequential][gradcheck]") {
  manual_seed(4);
  using Net = Sequential<Input<2, 6, 5>, Conv2d<3, 3, 1, 1, no_bias>, BatchNorm2d, LeakyReLU, AdaptiveAvgPool2d<2, 3>,
                         GELU, Flatten, Linear<4>, BatchNorm1d, SiLU, Identity, Linear<3, 0, no_bias>>;
  static_assert(std::is_same_v<Net::output_shape, Sample<3>>);
  static_assert(Net::parameter_count == 3 * 2 * 9 + 2 * 3 + 18 * 4 + 4 + 2 * 4 + 4 * 3);
  Net net(LeakyReLU(0.2), GELU("tanh"));
  CHECK(net.num_parameters() == Net::parameter_count);
  CHECK(net.get<2>().negative_slope() == 0.2);
  CHECK(net.get<4>().approximate() == "tanh");
  net.to(DType::float64);
  const Tensor x = randn({4, 2, 6, 5}, {.dtype = DType::float64, .requires_grad = true});
  check_network_gradients(net, x, Net::parameter_count);
}

TEST_CASE("bias as a template option: counts and state_dict agree; a contradicting flag is an error",
          "[nn][bias][errors]") {
  using Net = Sequential<Input<1, 28, 28>, Conv2d<16, 3, 1, 1, no_bias>, ReLU, Flatten, Linear<10>>;
  static_assert(Net::parameter_count == 16 * 9 + 16 * 28 * 28 * 10 + 10);
  Net net;
  CHECK(net.num_parameters() == Net::parameter_count);
  CHECK_FALSE(net.get<0>().bias().defined());
  CHECK_FALSE(net.state_dict().contains("0.bias"));
  CHECK((Linear<4, 0, no_bias>(3).num_parameters()) == 12);
  CHECK((Conv2d<4, 3, 1, 0, no_bias>(2, false).num_parameters()) == 72);
  CHECK_THROWS_AS((Conv2d<4, 3>(2, false)), ValueError);
  CHECK_THROWS_WITH((Conv2d<4, 3>(2, false)),
                    Catch::Contains("Conv2d: constructed with bias = false") && Catch::Contains("nn::no_bias"));
  CHECK_THROWS_WITH((Linear<4>(2, false)),
                    Catch::Contains("Linear: constructed with bias = false") && Catch::Contains("nn::no_bias"));
  CHECK_THROWS_WITH((Linear<4, 0, no_bias>(2, true)), Catch::Contains("Linear: constructed with bias = true"));
}

TEST_CASE("BatchNorm1d: [N, C] and [N, C, L] batch statistics, running statistics, eval", "[nn][batchnorm]") {
  manual_seed(5);
  for (const Shape& shape : {Shape{6, 3}, Shape{4, 3, 5}}) {
    INFO(shape);
    BatchNorm1d bn(3, 1e-5, 0.3);
    const Tensor x = randn(shape) * 2.0 + 1.0;
    const Tensor y = bn(x);
    const std::int64_t n = shape[0], l = shape.rank() == 3 ? shape[2] : 1;
    const auto xv = as_doubles(x), yv = as_doubles(y);
    const auto rm = as_doubles(bn.running_mean()), rv = as_doubles(bn.running_var());
    for (std::int64_t c = 0; c < 3; ++c) {
      double s = 0, s2 = 0, ys = 0, yss = 0;
      const auto at = [&](std::int64_t i, std::int64_t j) { return static_cast<std::size_t>((i * 3 + c) * l + j); };
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < l; ++j) s += xv[at(i, j)];
      const double m = s / static_cast<double>(n * l);
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < l; ++j) {
          s2 += (xv[at(i, j)] - m) * (xv[at(i, j)] - m);
          ys += yv[at(i, j)];
          yss += yv[at(i, j)] * yv[at(i, j)];
        }
      const double count = static_cast<double>(n * l);
      CHECK(rm[static_cast<std::size_t>(c)] == Approx(0.3 * m).epsilon(1e-5));
      CHECK(rv[static_cast<std::size_t>(c)] == Approx(0.7 + 0.3 * s2 / (count - 1)).epsilon(1e-5));
      CHECK(ys / count == Approx(0).margin(1e-5));
      CHECK(yss / count == Approx(s2 / count / (s2 / count + 1e-5)).epsilon(1e-4));
    }
    CHECK(bn.state_dict().integer("num_batches_tracked") == 1);
    bn.eval();
    NoGradGuard no_grad;
    const auto ye = as_doubles(bn(x));
    CHECK(ye[1] == Approx((xv[1] - rm[1 / l % 3]) / std::sqrt(rv[1 / l % 3] + 1e-5)).epsilon(1e-5));
    CHECK(bn.state_dict().integer("num_batches_tracked") == 1);
  }
}

TEST_CASE("BatchNorm1d: PyTorch's state_dict keys; no_affine has no parameters", "[nn][batchnorm]") {
  using Net = Sequential<Input<6>, Linear<4>, BatchNorm1d, ReLU, Linear<2>, BatchNorm<1, no_affine>>;
  static_assert(Net::parameter_count == 6 * 4 + 4 + 2 * 4 + 4 * 2 + 2);
  Net net;
  CHECK(net.num_parameters() == Net::parameter_count);
  std::vector<std::string> names;
  for (const auto& [name, t] : net.state_dict()) names.push_back(name);
  for (const char* key : {"1.weight", "1.bias", "1.running_mean", "1.running_var", "1.num_batches_tracked",
                          "4.running_mean", "4.running_var", "4.num_batches_tracked"})
    CHECK(std::find(names.begin(), names.end(), key) != names.end());
  CHECK(std::find(names.begin(), names.end(), "4.weight") == names.end());
  CHECK(net(randn({5, 6})).shape() == Shape{5, 2});
  using Seq = Sequential<Input<3, 7>, BatchNorm1d, Flatten, Linear<2>>;  // [C, L] samples
  static_assert(Seq::parameter_count == 6 + 21 * 2 + 2);
  Seq seq;
  CHECK(seq(randn({4, 3, 7})).shape() == Shape{4, 2});
}

TEST_CASE("BatchNorm1d: misuse names the layer and the shapes", "[nn][batchnorm][errors]") {
  BatchNorm1d bn(3);
  CHECK_THROWS_AS(bn(zeros({2, 3, 4, 4})), ShapeError);
  CHECK_THROWS_WITH(bn(zeros({2, 3, 4, 4})), Catch::Contains("BatchNorm1d") && Catch::Contains("rank 2 (N, C) or 3") &&
                                                 Catch::Contains("[2, 3, 4, 4]"));
  CHECK_THROWS_WITH(bn(zeros({2, 4})),
                    Catch::Contains("BatchNorm1d: expected 3 channels") && Catch::Contains("[2, 4]"));
  CHECK_THROWS_WITH(bn(zeros({1, 3})), Catch::Contains("more than 1 value"));
  CHECK_THROWS_AS(BatchNorm1d(0), ValueError);
  CHECK_THROWS_WITH(BatchNorm1d(3, 1e-5, 0.1, false), Catch::Contains("BatchNorm1d: constructed with affine = false") &&
                                                          Catch::Contains("nn::no_affine"));
  CHECK_THROWS_WITH(BatchNorm2d(3)(zeros({2, 3})), Catch::Contains("BatchNorm2d") && Catch::Contains("rank 4"));
}
