// The layers' ops (leaky_relu, add_relu, gelu, silu, adaptive_avg_pool2d, batch_norm and batch_norm_relu over [N, C]
// and [N, C, L]) and the layers built on them against PyTorch.

#include "reference.hpp"

using namespace tinynet;
using namespace tinynet::torch_reference;
using Inputs = std::vector<Tensor>;

TINYNET_TORCH_CASES(activations) {
  const Tensor a = input({4, 6}, 11, -4.0, 4.0);
  check("leaky_relu", "F.leaky_relu(a)", {a}, [](const Inputs& in) { return leaky_relu(in[0]); });
  check("leaky_relu 0.2", "F.leaky_relu(a, 0.2)", {a}, [](const Inputs& in) { return leaky_relu(in[0], 0.2); });
  check("leaky_relu -0.5", "F.leaky_relu(a, -0.5)", {a}, [](const Inputs& in) { return leaky_relu(in[0], -0.5); });
  check("add_relu", "F.relu(a + b)", {a, input({4, 6}, 14, -4.0, 4.0)},
        [](const Inputs& in) { return add_relu(in[0], in[1]); });
  check("gelu", "F.gelu(a)", {a}, [](const Inputs& in) { return gelu(in[0]); });
  check("gelu tails", "F.gelu(a)", {input({50}, 12, -12.0, 12.0)}, [](const Inputs& in) { return gelu(in[0]); });
  check("gelu tanh", "F.gelu(a, approximate='tanh')", {a}, [](const Inputs& in) { return gelu(in[0], "tanh"); });
  check("silu", "F.silu(a)", {a}, [](const Inputs& in) { return silu(in[0]); });
  check("silu tails", "F.silu(a)", {input({50}, 13, -30.0, 30.0)}, [](const Inputs& in) { return silu(in[0]); });
  check("nn.LeakyReLU(0.1) then nn.GELU('tanh') then nn.SiLU",
        "F.silu(F.gelu(F.leaky_relu(a, 0.1), approximate='tanh'))", {a}, [](const Inputs& in) {
          nn::LeakyReLU leaky(0.1);
          nn::GELU gelu_tanh("tanh");
          nn::SiLU silu_layer;
          return silu_layer(gelu_tanh(leaky(in[0])));
        });
  check("nn.Identity", "a * 1", {a}, [](const Inputs& in) { return nn::Identity()(in[0]); });
}

TINYNET_TORCH_CASES(adaptive_avg_pool2d) {
  const auto pool = [](std::int64_t oh, std::int64_t ow) {
    return [oh, ow](const Inputs& in) { return adaptive_avg_pool2d(in[0], {oh, ow}); };
  };
  check("adaptive_avg_pool2d divisible", "F.adaptive_avg_pool2d(a, (4, 2))", {input({2, 3, 8, 6}, 21)}, pool(4, 2));
  check("adaptive_avg_pool2d overlapping", "F.adaptive_avg_pool2d(a, (3, 4))", {input({2, 3, 7, 5}, 22)}, pool(3, 4));
  check("adaptive_avg_pool2d global", "F.adaptive_avg_pool2d(a, 1)", {input({2, 4, 5, 7}, 23)}, pool(1, 1));
  check("adaptive_avg_pool2d larger output", "F.adaptive_avg_pool2d(a, (5, 4))", {input({1, 2, 3, 2}, 24)}, pool(5, 4));
  check("adaptive_avg_pool2d 11x13 to 4x6", "F.adaptive_avg_pool2d(a, (4, 6))", {input({2, 2, 11, 13}, 25)},
        pool(4, 6));
  check("nn.AdaptiveAvgPool2d<3, 3>", "F.adaptive_avg_pool2d(a, 3)", {input({2, 3, 10, 7}, 26)},
        [](const Inputs& in) { return nn::AdaptiveAvgPool2d<3, 3>()(in[0]); });
}

TINYNET_TORCH_CASES(batch_norm1d) {
  const Tensor w = input({3}, 31, 0.5, 1.5), b = input({3}, 32);
  const Tensor rm = input({3}, 33), rv = input({3}, 34, 0.5, 2.0);
  for (const Shape& shape : {Shape{6, 3}, Shape{4, 3, 5}}) {
    const std::string dims = shape.rank() == 2 ? " [N, C]" : " [N, C, L]";
    const Tensor x = input(shape, 35 + static_cast<std::uint64_t>(shape.rank()), -2.0, 3.0);
    check("batch_norm training" + dims, "F.batch_norm(a, None, None, b, c, training=True, eps=1e-5)", {x, w, b},
          [](const Inputs& in) { return batch_norm(in[0], Tensor(), Tensor(), in[1], in[2], true, 0.1, 1e-5); });
    check("batch_norm eval" + dims, "F.batch_norm(a, d.detach(), e.detach(), b, c, training=False, eps=1e-3)",
          {x, w, b, rm, rv}, [](const Inputs& in) {
            return batch_norm(in[0], in[3].detach(), in[4].detach(), in[1], in[2], false, 0.1, 1e-3);
          });
    check("batch_norm running statistics" + dims,
          "(lambda m, v: (F.batch_norm(a, m, v, training=True, momentum=0.3), torch.cat([m, v]))[1])"
          "(b.detach().clone(), c.detach().clone())",
          {x, rm, rv}, [](const Inputs& in) {
            const Tensor m = in[1].detach().clone(), v = in[2].detach().clone();
            batch_norm(in[0], m, v, Tensor(), Tensor(), true, 0.3);
            return cat({m, v});
          });
    check("batch_norm_relu training" + dims, "F.relu(F.batch_norm(a, None, None, b, c, training=True, eps=1e-5))",
          {x, w, b},
          [](const Inputs& in) { return batch_norm_relu(in[0], Tensor(), Tensor(), in[1], in[2], true, 0.1, 1e-5); });
    check("batch_norm_relu eval" + dims,
          "F.relu(F.batch_norm(a, d.detach(), e.detach(), b, c, training=False, eps=1e-3))", {x, w, b, rm, rv},
          [](const Inputs& in) {
            return batch_norm_relu(in[0], in[3].detach(), in[4].detach(), in[1], in[2], false, 0.1, 1e-3);
          });
    check("nn.BatchNorm1d training" + dims,
          "F.batch_norm(a, torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64), "
          "torch.ones(3, dtype=torch.float64), torch.zeros(3, dtype=torch.float64), training=True)",
          {x}, [](const Inputs& in) {
            nn::BatchNorm1d bn(3);
            bn.to(DType::float64);
            return bn(in[0]);
          });
  }
}
