#include <catch2/catch.hpp>
#include <tinynet/tinynet.hpp>

#include "network_gradcheck.hpp"

using namespace tinynet;
using namespace tinynet::nn;

// The network of PyTorch's MNIST example.
using MnistNet = Sequential<Input<1, 28, 28>, Conv2d<32, 3>, ReLU, Conv2d<64, 3>, ReLU, MaxPool2d<2>, Dropout, Flatten,
                            Linear<128>, ReLU, Dropout, Linear<10>, LogSoftmax>;

// A user's layer whose forward always raises.
struct AlwaysRaises : Module<AlwaysRaises>, SameShape {
  Tensor forward(const Tensor&) { throw ValueError("AlwaysRaises: raised on purpose"); }
};

// Shapes and parameter counts are compile-time facts.
static_assert(std::is_same_v<MnistNet::output_shape, Sample<10>>);
static_assert(MnistNet::parameter_count == (32 * 9 + 32) + (64 * 32 * 9 + 64) + (128 * 9216 + 128) + (10 * 128 + 10));
static_assert(MnistNet::size == 12);
static_assert(
    std::is_same_v<Sequential<Input<3, 32, 32>, Conv2d<8, 5, 2, 2>, AvgPool2d<2>>::output_shape, Sample<8, 8, 8>>);
static_assert(std::is_same_v<Sequential<Input<3, 7, 9>, MaxPool2d<3, 2, 1>, Flatten>::output_shape, Sample<3 * 4 * 5>>);

TEST_CASE("Sequential: the MNIST example's network has PyTorch's names and shapes", "[nn][sequential]") {
  manual_seed(1);
  MnistNet net(Dropout(0.25), Dropout(0.5));
  CHECK(net.get<5>().p() == 0.25);
  CHECK(net.get<9>().p() == 0.5);
  CHECK(net.num_parameters() == MnistNet::parameter_count);

  const auto named = net.named_parameters();
  std::vector<std::string> names;
  for (const auto& [n, t] : named) names.push_back(n);
  CHECK(names == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias", "7.weight", "7.bias", "10.weight",
                                          "10.bias"});
  CHECK(named[4].second.shape() == Shape{128, 9216});

  const Tensor y = net(randn({3, 1, 28, 28}));
  CHECK(y.shape() == Shape{3, 10});
  // log_softmax output: each row's probabilities sum to one.
  for (int r = 0; r < 3; ++r) {
    double s = 0;
    for (int c = 0; c < 10; ++c) s += std::exp(y.at<float>({r, c}));
    CHECK(s == Approx(1.0).epsilon(1e-5));
  }
}

TEST_CASE("Sequential: a wrong input shape is a ShapeError naming both shapes", "[nn][sequential][errors]") {
  MnistNet net;
  CHECK_THROWS_AS(net(zeros({2, 3, 28, 28})), ShapeError);
  CHECK_THROWS_WITH(net(zeros({2, 3, 28, 28})), Catch::Contains("[N, 1, 28, 28]") && Catch::Contains("[2, 3, 28, 28]"));
  CHECK_THROWS_AS(net(zeros({1, 28, 28})), ShapeError);
}

TEST_CASE("Sequential: a wrong input shape says what is likely missing", "[nn][sequential][errors]") {
  MnistNet net;
  CHECK_THROWS_WITH(net(zeros({1, 28, 28})), Catch::Contains("without a batch dimension? pass x.unsqueeze(0)"));
  CHECK_THROWS_WITH(net(zeros({64, 784})),
                    Catch::Contains("got [64, 784]") && Catch::Contains("reshape it, x.view({64, 1, 28, 28})"));
  CHECK_THROWS_WITH(net(zeros({2, 3, 28, 28})), !Catch::Contains("unsqueeze") && !Catch::Contains("x.view"));
}

TEST_CASE("Sequential: an error inside a layer names the layer's index and type", "[nn][sequential][errors]") {
  Sequential<Input<4>, Linear<8>, ReLU, AlwaysRaises> net;
  try {
    net(zeros({2, 4}));
    FAIL("no error");
  } catch (const ValueError& e) {
    CHECK(std::string(e.what()) == "AlwaysRaises: raised on purpose (in Sequential.2 [AlwaysRaises])");
    CHECK(e.module_path() == "2");
    CHECK(e.message() == "AlwaysRaises: raised on purpose");
  }
}

TEST_CASE("Sequential: train() and eval() reach every layer; eval makes dropout the identity", "[nn][sequential]") {
  using Net = Sequential<Input<6>, Dropout, Linear<4>>;
  Net net(Dropout(0.9));
  CHECK(net.get<0>().is_training());
  net.eval();
  CHECK_FALSE(net.is_training());
  CHECK_FALSE(net.get<0>().is_training());
  const Tensor x = randn({5, 6});
  NoGradGuard no_grad;
  const Tensor expected = linear(x, net.get<1>().weight(), net.get<1>().bias());
  const Tensor y = net(x);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 4; ++j) CHECK(y.at<float>({i, j}) == expected.at<float>({i, j}));
  net.train();
  CHECK(net.get<0>().is_training());
}

TEST_CASE("Sequential: gradients of a whole network pass gradcheck in float64", "[nn][sequential][gradcheck]") {
  manual_seed(3);
  using Net = Sequential<Input<2, 7, 6>, Conv2d<3, 3, 1, 1>, Tanh, AvgPool2d<2>, Conv2d<4, 2>, Sigmoid, Flatten,
                         Linear<5>, LogSoftmax>;
  Net net;
  net.to(DType::float64);
  const Tensor x = randn({2, 2, 7, 6}, {.dtype = DType::float64, .requires_grad = true});
  check_network_gradients(net, x, Net::parameter_count);
}

TEST_CASE("Sequential: BatchNorm2d parameters and buffers are named and saved", "[nn][sequential][batchnorm]") {
  using Net = Sequential<Input<3, 8, 8>, Conv2d<4, 3>, BatchNorm2d, ReLU, Flatten, Linear<2>>;
  static_assert(Net::parameter_count == (4 * 3 * 9 + 4) + 8 + (2 * 144 + 2));
  Net net;
  const StateDict sd = net.state_dict();
  CHECK(sd.contains("1.weight"));
  CHECK(sd.contains("1.running_mean"));
  CHECK(sd.contains("1.running_var"));
  CHECK(sd.contains("1.num_batches_tracked"));
  CHECK(net.named_buffers().size() == 3);
  CHECK(net.parameters().size() == 6);
}

TEST_CASE("Sequential: a Conv2d followed by a ReLU runs as one fused op with the same results", "[nn][sequential]") {
  // A wide (stride 1, unpadded) and a padded convolution, each followed by a ReLU; the
  // other layers in between keep the unfused path. Compared with the layers applied one
  // at a time through the ops, with the same weights.
  manual_seed(5);
  using Net = Sequential<Input<2, 9, 8>, Conv2d<3, 3>, ReLU, Conv2d<4, 3, 1, 1>, ReLU, MaxPool2d<2>, Flatten, Linear<5>,
                         ReLU, Linear<3>, LogSoftmax>;
  Net net;
  const Tensor x = randn({4, 2, 9, 8});
  const Tensor y = net(x);
  auto& c1 = net.get<0>();
  auto& c2 = net.get<2>();
  auto& l1 = net.get<6>();
  auto& l2 = net.get<8>();
  Tensor h = relu(conv2d(x, c1.weight(), c1.bias()));
  h = max_pool2d(relu(conv2d(h, c2.weight(), c2.bias(), 1, 1)), 2).flatten(1);
  const Tensor expected = log_softmax(linear(relu(linear(h, l1.weight(), l1.bias())), l2.weight(), l2.bias()), 1);
  REQUIRE(y.shape() == expected.shape());
  for (std::int64_t i = 0; i < y.size(0); ++i)
    for (std::int64_t j = 0; j < y.size(1); ++j) CHECK(y.at<float>({i, j}) == expected.at<float>({i, j}));

  sum(expected).backward();
  std::vector<std::vector<float>> unfused;
  for (const Tensor& p : net.parameters()) {
    const float* g = p.grad().data<float>();
    unfused.emplace_back(g, g + p.numel());
  }
  net.zero_grad();
  sum(y).backward();
  std::size_t i = 0;
  for (const Tensor& p : net.parameters()) {
    const float* g = p.grad().data<float>();
    CHECK(std::vector<float>(g, g + p.numel()) == unfused[i++]);
  }
}
