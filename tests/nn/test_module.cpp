#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <optional>
#include <tinynet/io/io.hpp>
#include <tinynet/tinynet.hpp>

#include "network_gradcheck.hpp"
#include "temp_dir.hpp"

using namespace tinynet;
using namespace tinynet::nn;

namespace {

// The PyTorch MNIST example's network written free-form, as an nn.Module would be.
struct Net : Module<Net> {
  Conv2d<32, 3> conv1{1};
  Conv2d<64, 3> conv2{32};
  Dropout dropout1{0.25};
  Dropout dropout2{0.5};
  Linear<128> fc1{9216};
  Linear<10> fc2{128};

  Tensor forward(const Tensor& x) {
    Tensor h = relu(conv1(x));
    h = max_pool2d(relu(conv2(h)), 2);
    h = dropout1(h).flatten(1);
    h = dropout2(relu(fc1(h)));
    return log_softmax(fc2(h), 1);
  }

  template <class V>
  void visit(V&& v) {
    v("conv1", conv1);
    v("conv2", conv2);
    v("dropout1", dropout1);
    v("dropout2", dropout2);
    v("fc1", fc1);
    v("fc2", fc2);
  }
};

// A model nesting a Sequential and a layer, with a weight used twice.
struct Nested : Module<Nested> {
  Sequential<Input<4>, Linear<8>, ReLU> features;
  Linear<3> head{8};

  Tensor forward(const Tensor& x) { return head(features(x)) + head(features(x)); }

  template <class V>
  void visit(V&& v) {
    v("features", features);
    v("head", head);
  }
};

// A block inside a model: an error in block.conv is named by its full path.
struct Block : Module<Block> {
  Conv2d<4, 3, 1, 1> conv{2};
  Tensor forward(const Tensor& x) { return relu(conv(x)); }
  template <class V>
  void visit(V&& v) {
    v("conv", conv);
  }
};
struct Outer : Module<Outer> {
  Block block;
  Tensor forward(const Tensor& x) { return block(x); }
  template <class V>
  void visit(V&& v) {
    v("block", block);
  }
};

}  // namespace

TEST_CASE("free-form model: an error names the member that raised it, its type and the model", "[nn][module][errors]") {
  Net net;
  try {
    net(zeros({2, 1, 30, 30}));  // 12544 features reach fc1, which takes 9216
    FAIL("no error");
  } catch (const ShapeError& e) {
    CHECK_THAT(e.what(), Catch::EndsWith("(in Net.fc1 [Linear])"));
    CHECK(e.module_path() == "fc1");
  }
  Outer outer;
  try {
    outer(zeros({2, 3, 8, 8}));  // conv takes 2 channels
    FAIL("no error");
  } catch (const ShapeError& e) {
    CHECK_THAT(e.what(), Catch::Contains("3") && Catch::EndsWith("(in Outer.block.conv [Conv2d])"));
    CHECK(e.module_path() == "block.conv");
  }
  // Called directly, a layer names only itself.
  Linear<3> fc{4};
  CHECK_THROWS_WITH(fc(zeros({2, 5})), Catch::EndsWith("(in Linear)"));
}

TEST_CASE("free-form model: PyTorch's names, shared tape and training mode", "[nn][module]") {
  manual_seed(7);
  Net net;
  std::vector<std::string> names;
  for (const auto& [n, t] : net.named_parameters()) names.push_back(n);
  CHECK(names == std::vector<std::string>{"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc1.weight",
                                          "fc1.bias", "fc2.weight", "fc2.bias"});
  CHECK(net.num_parameters() == 1199882);

  const Tensor x = randn({2, 1, 28, 28});
  const Tensor loss = nll_loss(net(x), from_vector<std::int64_t>({3, 7}, {2}));
  loss.backward();
  for (const Tensor& p : net.parameters()) CHECK(p.grad().defined());
  net.zero_grad();
  for (const Tensor& p : net.parameters()) CHECK_FALSE(p.grad().defined());

  net.eval();
  CHECK_FALSE(net.dropout1.is_training());
  CHECK_FALSE(net.fc1.is_training());
}

TEST_CASE("free-form model computes what the Sequential with the same weights computes", "[nn][module]") {
  using Seq = Sequential<Input<1, 28, 28>, Conv2d<32, 3>, ReLU, Conv2d<64, 3>, ReLU, MaxPool2d<2>, Dropout, Flatten,
                         Linear<128>, ReLU, Dropout, Linear<10>, LogSoftmax>;
  manual_seed(11);
  Seq seq;
  Net net;
  const StateDict s = seq.state_dict();
  StateDict renamed;
  const char* map[][2] = {{"0.", "conv1."}, {"2.", "conv2."}, {"7.", "fc1."}, {"10.", "fc2."}};
  for (const auto& [from, to] : map) {
    const StateDict part = s.sub(from);
    renamed.merge(to, part);
  }
  net.load_state_dict(renamed);
  seq.eval();
  net.eval();
  NoGradGuard no_grad;
  const Tensor x = randn({3, 1, 28, 28});
  const Tensor a = seq(x), b = net(x);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 10; ++j) CHECK(a.at<float>({i, j}) == b.at<float>({i, j}));
}

TEST_CASE("nested modules get dotted names and shared weights accumulate both uses", "[nn][module]") {
  manual_seed(5);
  Nested m;
  std::vector<std::string> names;
  for (const auto& [n, t] : m.named_parameters()) names.push_back(n);
  CHECK(names == std::vector<std::string>{"features.0.weight", "features.0.bias", "head.weight", "head.bias"});

  m.to(DType::float64);
  const Tensor x = randn({3, 4}, {.dtype = DType::float64, .requires_grad = true});
  check_network_gradients(m, x, m.num_parameters());
}

TEST_CASE("to(dtype) refuses bfloat16 before converting anything", "[nn][module][errors][bfloat16]") {
  Nested m;
  CHECK_THROWS_AS(m.to(DType::bfloat16), TypeError);
  CHECK_THROWS_WITH(m.to(DType::bfloat16),
                    Catch::StartsWith("Module::to: modules hold float32 or float64 parameters, got bfloat16"));
  for (const Tensor& p : m.parameters()) {
    CHECK(p.dtype() == DType::float32);
    CHECK(p.requires_grad());
  }
}

TEST_CASE("state_dict round trip and load errors name the entry", "[nn][module][errors]") {
  manual_seed(2);
  Net a;
  manual_seed(3);
  Net b;
  const Tensor before = b.fc2.weight().clone();
  const Tensor b_weight_handle = b.fc2.weight();
  b.load_state_dict(a.state_dict());
  CHECK(b.fc2.weight().is_same(b_weight_handle));  // loaded in place: optimizers stay valid
  for (std::int64_t i = 0; i < a.fc2.weight().numel(); ++i)
    CHECK(b.fc2.weight().data<float>()[i] == a.fc2.weight().data<float>()[i]);
  CHECK(before.data<float>()[0] != b.fc2.weight().data<float>()[0]);

  StateDict missing = a.state_dict().sub("conv");  // only conv1.* / conv2.* remain, renamed
  CHECK_THROWS_AS(b.load_state_dict(missing), IndexError);

  StateDict extra = a.state_dict();
  extra.insert("fc3.weight", zeros({2, 2}));
  CHECK_THROWS_WITH(b.load_state_dict(extra), Catch::Contains("unexpected entry 'fc3.weight'"));
  CHECK_NOTHROW(b.load_state_dict(extra, /*strict=*/false));

  StateDict wrong_shape;
  for (const auto& [n, t] : a.state_dict()) wrong_shape.insert(n, n == "fc1.bias" ? zeros({127}) : t);
  CHECK_THROWS_AS(b.load_state_dict(wrong_shape), ShapeError);
  CHECK_THROWS_WITH(b.load_state_dict(wrong_shape),
                    Catch::Contains("fc1.bias") && Catch::Contains("[127]") && Catch::Contains("[128]"));

  StateDict wrong_dtype;
  for (const auto& [n, t] : a.state_dict()) wrong_dtype.insert(n, n == "conv1.bias" ? t.to(DType::float64) : t);
  CHECK_THROWS_WITH(b.load_state_dict(wrong_dtype), Catch::Contains("conv1.bias") && Catch::Contains("float64"));
}

TEST_CASE("free-form model: saved to a file and loaded into a fresh model", "[nn][module][io]") {
  const tinynet::testing::TempDir dir;
  const auto path = dir / "freeform.tnet";
  manual_seed(21);
  Net a;
  save(a, path);
  manual_seed(22);
  Net b;
  load(b, path);
  for (const auto& [name, t] : a.state_dict()) {
    INFO(name);
    const Tensor u = b.state_dict().at(name);
    CHECK(std::memcmp(t.raw_data(), u.raw_data(), t.nbytes()) == 0);
  }
}

namespace {

// A model with a list of children and an optional child.
struct Stack : Module<Stack> {
  ModuleList<Linear<6>> layers;
  std::optional<Linear<6>> extra;
  Dropout dropout{0.5};

  explicit Stack(bool with_extra) {
    layers.emplace_back(4);
    for (int i = 0; i < 2; ++i) layers.emplace_back(6);
    if (with_extra) extra.emplace(6);
  }
  Tensor forward(Tensor x) {
    for (auto& layer : layers) x = tinynet::tanh(layer(x));
    return dropout(extra ? (*extra)(x) : x);
  }
  template <class V>
  void visit(V&& v) {
    v("layers", layers);
    if (extra) v("extra", *extra);
    v("dropout", dropout);
  }
};

}  // namespace

TEST_CASE("ModuleList and optional children: PyTorch's names, parameters, modes, dtypes", "[nn][module]") {
  manual_seed(8);
  Stack with(true), without(false);
  const StateDict sd = with.state_dict();
  CHECK(sd.at("layers.0.weight").shape() == Shape{6, 4});
  CHECK(sd.at("layers.2.bias").shape() == Shape{6});
  CHECK(sd.at("extra.weight").shape() == Shape{6, 6});
  CHECK(sd.size() == 8);
  CHECK(without.state_dict().size() == 6);
  CHECK_FALSE(without.state_dict().contains("extra.weight"));
  CHECK(with.num_parameters() == (6 * 4 + 6) + 2 * (6 * 6 + 6) + (6 * 6 + 6));
  CHECK(without.num_parameters() == (6 * 4 + 6) + 2 * (6 * 6 + 6));
  CHECK(with.layers.size() == 3);
  CHECK_THROWS_WITH(with.layers[3], Catch::Contains("ModuleList: index 3 out of range for 3 modules"));
  // A model saved without the optional child does not load into one with it.
  CHECK_THROWS_WITH(with.load_state_dict(without.state_dict()), Catch::Contains("missing entry 'extra.weight'"));

  with.eval();
  CHECK_FALSE(with.layers[1].is_training());
  CHECK_FALSE(with.extra->is_training());
  with.to(DType::float64);
  CHECK(with.layers[2].weight().dtype() == DType::float64);
  CHECK(with.extra->weight().dtype() == DType::float64);
  const Tensor y = with(randn({2, 4}, {.dtype = DType::float64}));
  CHECK(y.shape() == Shape{2, 6});

  // An error inside a list child names it.
  try {
    without(zeros({2, 5}));
    FAIL("no error");
  } catch (const ShapeError& e) {
    CHECK(e.module_path() == "layers.0");
    CHECK_THAT(e.what(), Catch::EndsWith("(in Stack.layers.0 [Linear])"));
  }
}
