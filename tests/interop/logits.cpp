// Writes the MNIST example network's outputs (log-probabilities) on the first N test images
// as raw little-endian float32 [N, 10], for the interop tests to compare with PyTorch and
// ONNX Runtime. The model file is a tinynet model file or a PyTorch state_dict, told apart
// by content as the example's --evaluate tells them apart.
// Usage: interop_logits MODEL_FILE DATA_DIR OUT_FILE [N]

#include <cstdio>
#include <fstream>
#include <string>
#include <tinynet/data/mnist.hpp>
#include <tinynet/io/io.hpp>
#include <tinynet/tinynet.hpp>

#include "models.hpp"

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5) {
    std::fprintf(stderr, "usage: %s MODEL_FILE DATA_DIR OUT_FILE [N]\n", argv[0]);
    return 2;
  }
  using namespace tinynet;
  try {
    set_num_threads(2);
    mnist::Net net = mnist::make_net();
    if (is_pytorch_file(argv[1]))
      load_pytorch(net, argv[1]);
    else
      load(net, argv[1]);
    net.eval();
    const data::MNIST test(argv[2], {.train = false, .transform = data::MNIST::normalize()});
    const std::int64_t n = argc == 5 ? std::min<std::int64_t>(std::stoll(argv[4]), test.size()) : test.size();
    std::ofstream out(argv[3], std::ios::binary);
    NoGradGuard no_grad;
    for (std::int64_t start = 0; start < n; start += 1000) {
      const std::int64_t count = std::min<std::int64_t>(1000, n - start);
      std::vector<std::int64_t> rows(static_cast<std::size_t>(count));
      for (std::int64_t i = 0; i < count; ++i) rows[static_cast<std::size_t>(i)] = start + i;
      const Tensor y = net(test.get_batch(rows).data);
      out.write(static_cast<const char*>(y.raw_data()), static_cast<std::streamsize>(y.nbytes()));
    }
    if (!out.flush()) throw FileError(std::string("cannot write ") + argv[3]);
    std::printf("wrote %lld x 10 outputs to %s\n", static_cast<long long>(n), argv[3]);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
