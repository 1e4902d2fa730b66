// Models to and from PyTorch state_dict files: names mapped explicitly or in order, and
// every mismatch listed by name.

#include <catch2/catch.hpp>
#include <tinynet/io/pytorch_model.hpp>

#include "io/io_test_support.hpp"

using namespace tinynet;
using namespace io_test;

namespace {

// The PyTorch MNIST example's Net, as a tinynet Sequential (smaller linear layers).
using Small =
    nn::Sequential<nn::Input<1, 8, 8>, nn::Conv2d<4, 3>, nn::ReLU, nn::Conv2d<6, 3>, nn::ReLU, nn::MaxPool2d<2>,
                   nn::Dropout, nn::Flatten, nn::Linear<5>, nn::ReLU, nn::Dropout, nn::Linear<3>, nn::LogSoftmax>;

const std::vector<std::string> kTorchNames = {"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
                                              "fc1.weight",   "fc1.bias",   "fc2.weight",   "fc2.bias"};

}  // namespace

TEST_CASE("pytorch model: save under PyTorch's names, load by order and by map", "[io][pytorch]") {
  manual_seed(1);
  Small a;
  TempDir dir;
  const NameMap names = names_in_order(a.state_dict(), kTorchNames);
  CHECK(names[4] == std::pair<std::string, std::string>{"7.weight", "fc1.weight"});
  save_pytorch(a, dir / "net.pt", names);
  const StateDict file = load_pytorch_state_dict(dir / "net.pt");
  std::vector<std::string> file_names;
  for (const auto& [n, t] : file) file_names.push_back(n);
  CHECK(file_names == kTorchNames);

  manual_seed(2);
  Small by_order;
  CHECK_FALSE(bitwise_equal(by_order.state_dict(), a.state_dict()));
  load_pytorch(by_order, dir / "net.pt");
  CHECK(bitwise_equal(by_order.state_dict(), a.state_dict()));

  manual_seed(3);
  Small by_map;
  load_pytorch(by_map, dir / "net.pt", names);
  CHECK(bitwise_equal(by_map.state_dict(), a.state_dict()));
}

TEST_CASE("pytorch model: a mismatch lists missing, unexpected and wrongly shaped entries", "[io][pytorch]") {
  manual_seed(1);
  Small net;
  const StateDict before = net.state_dict();
  TempDir dir;
  StateDict sd;
  sd.insert("conv1.weight", zeros({4, 1, 3, 3}));
  sd.insert("conv1.bias", zeros({5}));  // wrong shape
  save_pytorch_state_dict(sd, dir / "short.pt");
  CHECK_THROWS_MATCHES(load_pytorch(net, dir / "short.pt"), StateDictError,
                       Says("short.pt") &&
                           Says("wrongly shaped: 'conv1.bias' is float32 [5] in the file, '0.bias' is "
                                "float32 [4] in the model") &&
                           Says("missing: '2.weight' (float32 [6, 4, 3, 3])") && Says("missing: '10.bias'"));
  CHECK(bitwise_equal(net.state_dict(), before));  // untouched

  const NameMap names = names_in_order(net.state_dict(), kTorchNames);
  sd.insert("extra", zeros({1}));
  save_pytorch_state_dict(sd, dir / "named.pt");
  CHECK_THROWS_MATCHES(load_pytorch(net, dir / "named.pt", names), StateDictError,
                       Says("missing: 'fc2.bias' (for the model's '10.bias', float32 [3]) is not in the file") &&
                           Says("unexpected: 'extra' (float32 [1]) is not in the name map") &&
                           Says("wrongly shaped: 'conv1.bias'"));
  NameMap partial(names.begin(), names.begin() + 2);
  partial.emplace_back("99.weight", "conv2.weight");
  CHECK_THROWS_MATCHES(load_pytorch(net, dir / "named.pt", partial), StateDictError,
                       Says("names '99.weight', which the model does not have") &&
                           Says("missing: the model's '2.weight' (float32 [6, 4, 3, 3]) is not in the name map"));
  CHECK_THROWS_MATCHES(save_pytorch(net, dir / "x.pt", partial), StateDictError,
                       Says("x.pt") && Says("the model's '7.weight' (float32 [5, 24]) is not in the name map"));
  CHECK_THROWS_MATCHES(names_in_order(net.state_dict(), {"a"}), StateDictError, Says("8 tensors, 1 names"));
  CHECK(bitwise_equal(net.state_dict(), before));
}
