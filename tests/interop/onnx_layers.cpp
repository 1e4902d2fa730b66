// Exports a network with every layer the ONNX exporter translates (Conv with stride,
// padding, dilation and groups, BatchNormalization with trained running statistics, Relu, Tanh, Sigmoid,
// MaxPool, AveragePool with padding, Dropout left out, Flatten, Gemm, Softmax) and writes
// an input batch and tinynet's outputs for it, for onnx_interop.py.
// Usage: interop_onnx_layers OUT_DIR

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <tinynet/onnx/export.hpp>
#include <tinynet/tinynet.hpp>

namespace nn = tinynet::nn;

using Layers = nn::Sequential<nn::Input<3, 12, 12>, nn::Conv2d<4, 3, 1, 1>, nn::BatchNorm2d, nn::ReLU, nn::MaxPool2d<2>,
                              nn::Conv2d<4, 3, 1, 2, nn::dilation<2>, nn::groups<4>>,
                              nn::Conv2d<6, 3, 2, 1, nn::groups<2>>, nn::Tanh, nn::AvgPool2d<3, 1, 1>, nn::Dropout,
                              nn::Flatten, nn::Linear<16>, nn::Sigmoid, nn::Dropout, nn::Linear<5>, nn::Softmax>;

void write(const std::filesystem::path& path, const tinynet::Tensor& t) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(t.raw_data()), static_cast<std::streamsize>(t.nbytes()));
  if (!out.flush()) throw tinynet::FileError("cannot write " + path.string());
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  using namespace tinynet;
  try {
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    manual_seed(7);
    Layers net;
    {
      // Training-mode passes move BatchNorm's running statistics away from 0 and 1.
      NoGradGuard no_grad;
      for (int i = 0; i < 5; ++i) net(randn({16, 3, 12, 12}) * 2.0 + 0.5);
    }
    net.eval();
    const Tensor x = randn({7, 3, 12, 12});
    NoGradGuard no_grad;
    write(dir / "layers_input.bin", x);
    write(dir / "layers_tinynet.bin", net(x));
    onnx::export_model(net, dir / "layers.onnx");
    std::printf("wrote %s/layers.onnx, layers_input.bin [7, 3, 12, 12], layers_tinynet.bin [7, 5]\n", dir.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
