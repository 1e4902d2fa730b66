// docs/interop.md: a model to PyTorch and back, and to ONNX.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <tinynet/io/io.hpp>
#include <tinynet/onnx/export.hpp>
#include <tinynet/tinynet.hpp>

using namespace tinynet;

// The PyTorch MNIST example's network.
using Net = nn::Sequential<nn::Input<1, 28, 28>, nn::Conv2d<32, 3>, nn::ReLU, nn::Conv2d<64, 3>, nn::ReLU,
                           nn::MaxPool2d<2>, nn::Dropout, nn::Flatten, nn::Linear<128, 9216>, nn::ReLU, nn::Dropout,
                           nn::Linear<10>, nn::LogSoftmax>;

int main() {
  const auto dir = std::filesystem::temp_directory_path() / "tinynet-snippet-interop";
  std::filesystem::create_directories(dir);
  std::filesystem::current_path(dir);
  manual_seed(1);
  Net net;
  const StateDict trained = net.state_dict();

  // [interop]
  // To PyTorch: the PyTorch example's names, paired with the model's tensors in order.
  const tinynet::NameMap names = tinynet::names_in_order(
      net.state_dict(),
      {"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"});
  tinynet::save_pytorch(net, "mnist_cnn.pt", names);  // torch.load("mnist_cnn.pt", weights_only=True)

  // From PyTorch: entries paired in order (every shape checked), or through the name map.
  tinynet::load_pytorch(net, "mnist_cnn.pt");
  tinynet::load_pytorch(net, "mnist_cnn.pt", names);

  // To ONNX Runtime: eval mode, opset 17, dynamic batch, initializers under PyTorch's names.
  tinynet::onnx::export_model(net, "mnist_cnn.onnx", {.names = names});
  // [interop]

  manual_seed(2);
  Net other;
  load_pytorch(other, "mnist_cnn.pt");
  bool same = true;
  auto it = trained.begin();
  for (const auto& [name, t] : other.state_dict()) {
    const Tensor& want = (it++)->second;
    same = same && std::memcmp(t.raw_data(), want.raw_data(), t.nbytes()) == 0;
  }
  const auto onnx_bytes = std::filesystem::file_size("mnist_cnn.onnx");
  std::printf("PyTorch file read back %s; ONNX file of %llu bytes\n", same ? "bit for bit" : "WITH DIFFERENCES",
              static_cast<unsigned long long>(onnx_bytes));
  std::filesystem::current_path(std::filesystem::temp_directory_path());
  std::filesystem::remove_all(dir);
  // The initializers alone take 4 bytes per parameter.
  return same && onnx_bytes > 4 * static_cast<std::uintmax_t>(Net::parameter_count) ? 0 : 1;
}
