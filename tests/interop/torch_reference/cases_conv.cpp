// conv2d with stride, padding, dilation and groups (depthwise included), conv2d_relu, and
// Conv2d layers with those options against PyTorch.

#include "reference.hpp"

using namespace tinynet;
using namespace tinynet::torch_reference;
using Inputs = std::vector<Tensor>;

namespace {

/// A case for F.conv2d(a, b, c, stride, padding, dilation, groups) on x [n, c, h, w] and
/// weight [out_c, c / groups, kh, kw], with a bias unless `bias` is false.
void conv_case(std::string name, Shape x, Shape w, int stride, int padding, int dilation, int groups,
               std::uint64_t seed, bool bias = true) {
  const std::string settings = std::to_string(stride) + ", " + std::to_string(padding) + ", " +
                               std::to_string(dilation) + ", " + std::to_string(groups) + ")";
  Inputs in{input(x, seed), input(w, seed + 1)};
  if (bias) in.push_back(input({w[0]}, seed + 2));
  check(std::move(name), bias ? "F.conv2d(a, b, c, " + settings : "F.conv2d(a, b, None, " + settings, std::move(in),
        [=](const Inputs& t) { return conv2d(t[0], t[1], bias ? t[2] : Tensor(), stride, padding, dilation, groups); });
}

}  // namespace

TINYNET_TORCH_CASES(conv2d) {
  conv_case("conv2d", {2, 3, 7, 6}, {4, 3, 3, 3}, 1, 0, 1, 1, 1);
  conv_case("conv2d stride 2 padding 1", {2, 3, 8, 7}, {5, 3, 3, 3}, 2, 1, 1, 1, 4);
  conv_case("conv2d non-square kernel, no bias", {1, 2, 6, 9}, {3, 2, 2, 4}, 1, 1, 1, 1, 7, false);
  conv_case("conv2d dilation 2", {2, 2, 9, 8}, {3, 2, 3, 3}, 1, 0, 2, 1, 10);
  conv_case("conv2d dilation 3 stride 2 padding 2", {2, 3, 11, 10}, {4, 3, 3, 2}, 2, 2, 3, 1, 13);
  conv_case("conv2d groups 2", {2, 4, 6, 6}, {6, 2, 3, 3}, 1, 1, 1, 2, 16);
  conv_case("conv2d groups 3 stride 2", {2, 6, 7, 7}, {3, 2, 3, 3}, 2, 0, 1, 3, 19);
  conv_case("conv2d depthwise", {2, 4, 7, 6}, {4, 1, 3, 3}, 1, 1, 1, 4, 22);
  conv_case("conv2d depthwise, two filters a channel", {2, 3, 6, 6}, {6, 1, 3, 3}, 1, 1, 1, 3, 25);
  conv_case("conv2d depthwise dilation 2 stride 2", {1, 4, 10, 9}, {4, 1, 3, 3}, 2, 2, 2, 4, 28);
  conv_case("conv2d groups 2 dilation 2, 2x3 kernel, no bias", {2, 4, 8, 8}, {4, 2, 2, 3}, 1, 1, 2, 2, 31, false);
  conv_case("conv2d groups 2 1x1", {2, 6, 5, 5}, {4, 3, 1, 1}, 1, 0, 1, 2, 34);
  check("conv2d_relu groups 2 dilation 2", "F.relu(F.conv2d(a, b, c, 1, 2, 2, 2))",
        {input({2, 4, 7, 7}, 37), input({6, 2, 3, 3}, 38), input({6}, 39)},
        [](const Inputs& t) { return conv2d_relu(t[0], t[1], t[2], 1, 2, 2, 2); });
}

TINYNET_TORCH_CASES(conv2d_layers) {
  // A depthwise-separable block of layers, weights w[i] = i / numel - 0.5 on both sides: a
  // depthwise 3x3 with dilation 2 and no bias, a ReLU (fused), a pointwise 1x1 in 2 groups.
  check("nn.Conv2d depthwise dilated, then grouped pointwise",
        "F.conv2d(F.relu(F.conv2d(a, (torch.arange(36, dtype=torch.float64) / 36 - 0.5).reshape(4, 1, 3, 3), "
        "None, 1, 2, 2, 4)), (torch.arange(12, dtype=torch.float64) / 12 - 0.5).reshape(6, 2, 1, 1), "
        "torch.arange(6, dtype=torch.float64) / 6 - 0.5, 1, 0, 1, 2)",
        {input({2, 4, 8, 8}, 41)}, [](const Inputs& t) {
          nn::Conv2d<4, 3, 1, 2, nn::dilation<2>, nn::groups<4>, nn::no_bias> depthwise(4);
          nn::Conv2d<6, 1, 1, 0, nn::groups<2>> pointwise(4);
          depthwise.to(DType::float64);
          pointwise.to(DType::float64);
          for (const auto& params : {depthwise.parameters(), pointwise.parameters()})
            for (Tensor p : params) {
              Tensor ramp = empty(p.shape(), {.dtype = DType::float64});
              for (std::int64_t i = 0; i < ramp.numel(); ++i)
                ramp.data<double>()[i] = static_cast<double>(i) / static_cast<double>(ramp.numel()) - 0.5;
              NoGradGuard no_grad;
              p.copy_(ramp);
            }
          return pointwise(depthwise.forward_with(nn::ReLU{}, t[0]));
        });
}
