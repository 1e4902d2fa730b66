// summary(net) and operator<<: one line per layer with its output shape and parameter
// count, and the totals, for a Sequential and for a free-form module.

#include <catch2/catch.hpp>
#include <sstream>
#include <tinynet/tinynet.hpp>

using namespace tinynet;
using namespace tinynet::nn;

namespace {

using SummaryNet = Sequential<Input<1, 28, 28>, Conv2d<8, 3, 1, 1, no_bias>, BatchNorm2d, ReLU, AdaptiveAvgPool2d<1, 1>,
                              Flatten, Linear<10>>;

struct SummaryModel : Module<SummaryModel> {
  Conv2d<4, 3> stem{1};
  SummaryNet body;
  Tensor scale = ones({1}, {.requires_grad = true});
  Tensor forward(const Tensor& x) { return body(x) * scale; }
  template <class V>
  void visit(V&& v) {
    v("stem", stem);
    v("body", body);
    v("scale", scale, TensorKind::parameter);
  }
};

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("summary: a Sequential's layers, output shapes for the batch, parameters, totals", "[nn][summary]") {
  SummaryNet net;
  const std::string text = summary(net, 32);
  const auto l = lines(text);
  REQUIRE(l.size() == 15);
  CHECK(l[0] == "Sequential, input [32, 1, 28, 28]");
  CHECK(l[2].starts_with("Layer (name: type)"));
  const std::string expected[] = {"0: Conv2d<8, 3, 1, 1, Bias::none>  [32, 8, 28, 28]  72",
                                  "1: BatchNorm2d                     [32, 8, 28, 28]  16",
                                  "2: ReLU                            [32, 8, 28, 28]  0",
                                  "3: AdaptiveAvgPool2d<1>            [32, 8, 1, 1]    0",
                                  "4: Flatten                         [32, 8]          0",
                                  "5: Linear<10>                      [32, 10]         90"};
  for (std::size_t i = 0; i < 6; ++i) CHECK(l[4 + i] == expected[i]);
  CHECK(l[11] == "Total params: 178");
  CHECK(l[12] == "Trainable params: 178");
  CHECK(l[13] == "Non-trainable params: 0");
  CHECK(SummaryNet::parameter_count == 178);

  std::ostringstream os;
  os << net;
  CHECK(os.str() == summary(net));
  CHECK(lines(os.str())[0] == "Sequential, input [1, 1, 28, 28]");
  CHECK_THROWS_WITH(summary(net, 0), Catch::Contains("summary: batch_size must be positive, got 0"));
}

TEST_CASE("summary: layers that name themselves, however their type was spelled", "[nn][summary]") {
  // AdaptiveAvgPool2d<1> was first spelled <1, 1> above (SummaryNet), and the compiler may
  // print either spelling: the layer's own type_name() decides.
  Sequential<Input<2, 6, 6>, BatchNorm<2, no_affine>, AdaptiveAvgPool2d<2, 3>, AdaptiveAvgPool2d<1>, Flatten,
             BatchNorm1d>
      net;
  const auto l = lines(summary(net, 4));
  REQUIRE(l.size() >= 9);
  CHECK(l[4] == "0: BatchNorm2d<Affine::none>  [4, 2, 6, 6]  0");
  CHECK(l[5] == "1: AdaptiveAvgPool2d<2, 3>    [4, 2, 2, 3]  0");
  CHECK(l[6] == "2: AdaptiveAvgPool2d<1>       [4, 2, 1, 1]  0");
  CHECK(l[7] == "3: Flatten                    [4, 2]        0");
  CHECK(l[8] == "4: BatchNorm1d                [4, 2]        4");
}

TEST_CASE("summary: a free-form module's children by name; frozen parameters are not trainable", "[nn][summary]") {
  SummaryModel model;
  Tensor stem_weight = model.stem.weight();
  stem_weight.requires_grad_(false);
  std::ostringstream os;
  summary(os, model, 2);
  const auto l = lines(os.str());
  CHECK(l[0] == "SummaryModel");
  CHECK(l[4].starts_with("stem: Conv2d<4, 3>"));
  CHECK(l[4].find(" - ") != std::string::npos);
  CHECK(l[4].ends_with(" 40"));
  CHECK(l[5].starts_with("body: Sequential"));
  CHECK(l[5].find("[2, 10]") != std::string::npos);
  CHECK(l[5].ends_with(" 178"));
  CHECK(l[6].starts_with("body.0: Conv2d<8, 3, 1, 1, Bias::none>"));
  CHECK(l[11].starts_with("body.5: Linear<10>"));
  CHECK(os.str().find("Total params: 219\nTrainable params: 183\nNon-trainable params: 36\n") != std::string::npos);
}
