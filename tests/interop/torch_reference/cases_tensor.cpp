// The tensor API's ops (comparisons, where/clamp/abs/sqrt/maximum/minimum, reductions over a
// dimension, cat/stack, views and indexing, creation) against PyTorch.

#include "reference.hpp"

using namespace tinynet;
using namespace tinynet::torch_reference;
using Inputs = std::vector<Tensor>;

namespace {

Tensor indices(std::vector<std::int64_t> values) {
  const auto n = static_cast<std::int64_t>(values.size());
  return from_vector(values, {n});
}

}  // namespace

TINYNET_TORCH_CASES(comparisons) {
  // b repeats some of a's values so that equality is exercised, not only order.
  const Tensor a = input({3, 4}, 1);
  const Tensor b = where(lt(input({3, 4}, 2), 0.0), a, input({3, 4}, 3));
  const Tensor row = narrow(a, 0, 1, 1);
  check("eq", "torch.eq(a, b)", {a, b}, [](const Inputs& in) { return eq(in[0], in[1]); });
  check("ne", "a != b", {a, b}, [](const Inputs& in) { return in[0] != in[1]; });
  check("lt broadcast", "a < b", {a, row}, [](const Inputs& in) { return in[0] < in[1]; });
  check("le broadcast", "a <= b", {a, row}, [](const Inputs& in) { return in[0] <= in[1]; });
  check("gt scalar", "a > 0.25", {a}, [](const Inputs& in) { return in[0] > 0.25; });
  check("ge", "torch.ge(a, b)", {a, b}, [](const Inputs& in) { return ge(in[0], in[1]); });
  check("sum of eq", "torch.sum(torch.eq(a, b))", {a, b}, [](const Inputs& in) { return sum(eq(in[0], in[1])); });
}

TINYNET_TORCH_CASES(elementwise) {
  const Tensor a = input({4, 5}, 4);
  const Tensor b = input({4, 5}, 5);
  const Tensor cond = lt(input({4, 5}, 6), 0.0);
  check("where", "torch.where(a, b, c)", {cond, a, b}, [](const Inputs& in) { return where(in[0], in[1], in[2]); });
  check("where broadcast", "torch.where(a, b, c)", {narrow(cond, 0, 0, 1), a, input({5}, 7)},
        [](const Inputs& in) { return where(in[0], in[1], in[2]); });
  check("clamp", "torch.clamp(a, -0.5, 0.3)", {a}, [](const Inputs& in) { return clamp(in[0], -0.5, 0.3); });
  check("clamp min", "torch.clamp(a, min=-0.2)", {a}, [](const Inputs& in) { return clamp_min(in[0], -0.2); });
  check("clamp max", "torch.clamp(a, max=0.1)", {a}, [](const Inputs& in) { return clamp_max(in[0], 0.1); });
  check("abs", "torch.abs(a)", {a}, [](const Inputs& in) { return abs(in[0]); });
  check("sqrt", "torch.sqrt(a)", {input({4, 5}, 8, 0.1, 4.0)}, [](const Inputs& in) { return sqrt(in[0]); });
  check("maximum", "torch.maximum(a, b)", {a, b}, [](const Inputs& in) { return maximum(in[0], in[1]); });
  check("minimum broadcast", "torch.minimum(a, b)", {a, input({5}, 9)},
        [](const Inputs& in) { return minimum(in[0], in[1]); });
}

TINYNET_TORCH_CASES(reductions) {
  const Tensor a = input({3, 4, 5}, 10);
  for (int dim : {0, 1, 2, -1}) {
    for (bool keep : {false, true}) {
      const std::string args = std::to_string(dim) + ", keepdim=" + (keep ? "True" : "False");
      const std::string at = "(dim " + std::to_string(dim) + (keep ? ", keepdim)" : ")");
      check("sum " + at, "torch.sum(a, " + args + ")", {a}, [=](const Inputs& in) { return sum(in[0], dim, keep); });
      check("mean " + at, "torch.mean(a, " + args + ")", {a}, [=](const Inputs& in) { return mean(in[0], dim, keep); });
      check("amax " + at, "torch.amax(a, " + args + ")", {a}, [=](const Inputs& in) { return amax(in[0], dim, keep); });
      check("amin " + at, "torch.amin(a, " + args + ")", {a}, [=](const Inputs& in) { return amin(in[0], dim, keep); });
      check("argmax " + at, "torch.argmax(a, " + args + ")", {a},
            [=](const Inputs& in) { return argmax(in[0], dim, keep); });
      check("argmin " + at, "torch.argmin(a, " + args + ")", {a},
            [=](const Inputs& in) { return argmin(in[0], dim, keep); });
    }
  }
  check("sum all", "torch.sum(a)", {a}, [](const Inputs& in) { return sum(in[0]); });
  check("mean all", "torch.mean(a)", {a}, [](const Inputs& in) { return mean(in[0]); });
  check("amax all", "torch.amax(a)", {a}, [](const Inputs& in) { return amax(in[0]); });
  check("argmin all", "torch.argmin(a)", {a}, [](const Inputs& in) { return argmin(in[0]); });
}

TINYNET_TORCH_CASES(joining) {
  const Tensor a = input({2, 3, 4}, 11);
  const Tensor b = input({2, 1, 4}, 12);
  const Tensor c = input({2, 2, 4}, 13);
  check("cat dim 1", "torch.cat([a, b, c], 1)", {a, b, c}, [](const Inputs& in) {
    return cat({in[0], in[1], in[2]}, 1);
  });
  check("cat dim -3", "torch.cat([a, b], -3)", {a, input({1, 3, 4}, 14)}, [](const Inputs& in) {
    return cat({in[0], in[1]}, -3);
  });
  check("cat float32 with float64", "torch.cat([a, b], 0)", {input({2, 3}, 23).to(DType::float32), input({1, 3}, 24)},
        [](const Inputs& in) {
          return cat({in[0], in[1]}, 0);
        });
  check("stack dim 0", "torch.stack([a, b])", {a, input({2, 3, 4}, 15)}, [](const Inputs& in) {
    return stack({in[0], in[1]}, 0);
  });
  check("stack dim -1", "torch.stack([a, b], -1)", {a, input({2, 3, 4}, 16)}, [](const Inputs& in) {
    return stack({in[0], in[1]}, -1);
  });
}

TINYNET_TORCH_CASES(views) {
  const Tensor a = input({3, 4, 5}, 17);
  check("narrow", "a.narrow(1, 1, 2)", {a}, [](const Inputs& in) { return in[0].narrow(1, 1, 2); });
  check("narrow last", "a.narrow(-1, 3, 2)", {a}, [](const Inputs& in) { return in[0].narrow(-1, 3, 2); });
  check("select", "a.select(0, 2)", {a}, [](const Inputs& in) { return in[0].select(0, 2); });
  check("select negative index", "a.select(2, -1)", {a}, [](const Inputs& in) { return in[0].select(2, -1); });
  check("index_select", "torch.index_select(a, 1, b)", {a, indices({3, 0, 3, 1})},
        [](const Inputs& in) { return index_select(in[0], 1, in[1]); });
  check("unsqueeze", "a.unsqueeze(1)", {a}, [](const Inputs& in) { return in[0].unsqueeze(1); });
  check("squeeze dim", "a.squeeze(1)", {input({3, 1, 5}, 18)}, [](const Inputs& in) { return in[0].squeeze(1); });
  check("squeeze all", "a.squeeze()", {input({1, 3, 1, 5}, 19)}, [](const Inputs& in) { return in[0].squeeze(); });
  check("permute", "a.permute(2, 0, 1)", {a}, [](const Inputs& in) { return in[0].permute({2, 0, 1}); });
  check("transpose", "a.transpose(0, 2)", {a}, [](const Inputs& in) { return in[0].transpose(0, 2); });
  check("permute then contiguous and reshape", "a.permute(1, 0, 2).contiguous().reshape(4, 15)", {a},
        [](const Inputs& in) {
          return in[0].permute({1, 0, 2}).contiguous().reshape({4, 15});
        });
}

TINYNET_TORCH_CASES(creation) {
  const DType f64 = DType::float64;
  check("arange", "torch.arange(0.5, 3.0, 0.25, dtype=torch.float64)", {},
        [=](const Inputs&) { return arange(0.5, 3.0, 0.25, {.dtype = f64}); });
  check("arange int", "torch.arange(7)", {}, [](const Inputs&) { return arange(7); });
  check("full", "torch.full((2, 3), -1.5, dtype=torch.float64)", {}, [=](const Inputs&) {
    return full({2, 3}, -1.5, {.dtype = f64});
  });
  check("zeros_like", "torch.zeros_like(a)", {input({2, 3}, 20)}, [](const Inputs& in) { return zeros_like(in[0]); });
  check("ones_like", "torch.ones_like(a)", {input({2, 3}, 21)}, [](const Inputs& in) { return ones_like(in[0]); });
  check("full_like", "torch.full_like(a, 2.5)", {input({2, 3}, 22)},
        [](const Inputs& in) { return full_like(in[0], 2.5); });
}
