// bfloat16 state_dicts for pytorch_bf16.py:
//   bf16_state_dict write FILE   writes "all" (every bfloat16 bit pattern, [256, 256]) and
//                                "v" (1, 0.1, -3.5 rounded from float32) as a PyTorch file;
//   bf16_state_dict read FILE    prints each entry of a PyTorch file as "name dtype shape"
//                                and its bits in hex, one line per entry.

#include <cstdio>
#include <cstring>
#include <tinynet/core/creation.hpp>
#include <tinynet/io/pytorch.hpp>

using namespace tinynet;

int main(int argc, char** argv) {
  if (argc != 3 || (std::strcmp(argv[1], "write") != 0 && std::strcmp(argv[1], "read") != 0)) {
    std::fprintf(stderr, "usage: %s write|read FILE\n", argv[0]);
    return 2;
  }
  if (std::strcmp(argv[1], "write") == 0) {
    Tensor all(Shape{256, 256}, {DType::bfloat16, Device::cpu(), false});
    for (std::uint32_t b = 0; b <= 0xFFFF; ++b)
      all.data<bfloat16>()[b] = bfloat16::from_bits(static_cast<std::uint16_t>(b));
    StateDict sd;
    sd.insert("all", all);
    sd.insert("v", from_vector<float>({1.0f, 0.1f, -3.5f}, {3}).to(DType::bfloat16));
    save_pytorch_state_dict(sd, argv[2]);
    return 0;
  }
  for (const auto& [name, t] : load_pytorch_state_dict(argv[2])) {
    std::printf("%s %s %s", name.c_str(), dtype_name(t.dtype()), t.shape().str().c_str());
    for (std::int64_t i = 0; i < t.numel(); ++i) std::printf(" %04x", t.data<bfloat16>()[i].bits);
    std::printf("\n");
  }
  return 0;
}
