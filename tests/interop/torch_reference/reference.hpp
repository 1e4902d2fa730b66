#pragma once
// Float64 comparisons of tinynet's ops against PyTorch's on the same inputs: each case is a
// computation written twice, with tinynet here and as a PyTorch expression that compare.py
// evaluates (values and every floating input's gradient within 1e-9 relative).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tinynet/tinynet.hpp"

namespace tinynet::torch_reference {

/// A float64 tensor of `shape`, values uniform in [lo, hi) from `seed` (the same on every machine).
Tensor input(const Shape& shape, std::uint64_t seed, double lo = -1.0, double hi = 1.0);

/// One case. `torch_expr` sees the inputs as a, b, c, ... and `torch` and `F`
/// (torch.nn.functional); `fn` gets the same inputs, the floating ones as leaves that require
/// grad. Integer and bool outputs are compared exactly and have no gradients.
void check(std::string name, std::string torch_expr, std::vector<Tensor> inputs,
           std::function<Tensor(const std::vector<Tensor>&)> fn);

namespace detail {
using CaseList = void (*)();
std::vector<CaseList>& registry();
struct Registrar {
  explicit Registrar(CaseList cases) { registry().push_back(cases); }
};
}  // namespace detail

}  // namespace tinynet::torch_reference

/// A file's cases: `TINYNET_TORCH_CASES(views) { check(...); ... }`.
#define TINYNET_TORCH_CASES(area)                                                            \
  static void tinynet_torch_cases_##area();                                                  \
  static const ::tinynet::torch_reference::detail::Registrar tinynet_torch_registrar_##area{ \
      &tinynet_torch_cases_##area};                                                          \
  static void tinynet_torch_cases_##area()
