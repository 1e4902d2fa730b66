// Exports two networks with every layer the ONNX exporter translates and writes an input
// batch and tinynet's outputs for each, for onnx_interop.py. layers.onnx: Conv with stride,
// padding, dilation and groups, BatchNormalization with trained running statistics, Relu,
// Tanh, Sigmoid, MaxPool, AveragePool with padding, Dropout left out, Flatten, Gemm, Softmax.
// blocks.onnx: residual blocks with and without a projection shortcut, SiLU, GELU (exact and
// tanh), LeakyReLU, Identity, GlobalAveragePool, BatchNorm1d, LogSoftmax.
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

using Blocks = nn::Sequential<nn::Input<3, 12, 12>, nn::Conv2d<8, 3, 1, 1, nn::no_bias>, nn::BatchNorm2d, nn::SiLU,
                              nn::Residual<nn::Conv2d<8, 3, 1, 1, nn::no_bias>, nn::BatchNorm2d, nn::GELU,
                                           nn::Conv2d<8, 3, 1, 1, nn::no_bias>, nn::BatchNorm2d>,
                              nn::ReLU,
                              nn::Residual<nn::Body<nn::Conv2d<16, 3, 2, 1>, nn::LeakyReLU, nn::Conv2d<16, 3, 1, 1>>,
                                           nn::Shortcut<nn::Conv2d<16, 1, 2, 0, nn::no_bias>, nn::BatchNorm2d>>,
                              nn::GELU, nn::Identity, nn::AdaptiveAvgPool2d<1>, nn::Flatten, nn::Linear<12>,
                              nn::BatchNorm1d, nn::LeakyReLU, nn::Linear<5>, nn::LogSoftmax>;

void write(const std::filesystem::path& path, const tinynet::Tensor& t) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(t.raw_data()), static_cast<std::streamsize>(t.nbytes()));
  if (!out.flush()) throw tinynet::FileError("cannot write " + path.string());
}

/// Moves the batch norms' running statistics away from 0 and 1 by training-mode passes,
/// then writes NAME.onnx, an input batch NAME_input.bin [7, 3, 12, 12] and tinynet's eval-mode
/// outputs for it, NAME_tinynet.bin [7, 5].
template <class Net>
void export_with_inputs(Net& net, const std::filesystem::path& dir, const std::string& name) {
  using namespace tinynet;
  NoGradGuard no_grad;
  for (int i = 0; i < 5; ++i) net(randn({16, 3, 12, 12}) * 2.0 + 0.5);
  net.eval();
  const Tensor x = randn({7, 3, 12, 12});
  write(dir / (name + "_input.bin"), x);
  write(dir / (name + "_tinynet.bin"), net(x));
  onnx::export_model(net, dir / (name + ".onnx"));
  std::printf("wrote %s/%s.onnx, %s_input.bin [7, 3, 12, 12], %s_tinynet.bin [7, 5]\n", dir.c_str(), name.c_str(),
              name.c_str(), name.c_str());
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
    Layers layers;
    export_with_inputs(layers, dir, "layers");
    // Outside the blocks, GELU approximates by tanh and LeakyReLU takes a slope of 0.05 (in
    // them, the defaults: exact and 0.01).
    Blocks blocks(nn::GELU("tanh"), nn::LeakyReLU(0.05));
    export_with_inputs(blocks, dir, "blocks");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
