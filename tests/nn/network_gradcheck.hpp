#pragma once
// A whole network's gradients in float64 against finite differences: its input and every
// parameter, each scalar of them checked.

#include <catch2/catch.hpp>
#include <cstdint>
#include <span>
#include <tinynet/tinynet.hpp>
#include <vector>

/// `net` (already in float64) at the input `x`; `parameters` is how many scalars the
/// network should hold (its compile-time count, for a Sequential).
template <class Net>
void check_network_gradients(Net& net, const tinynet::Tensor& x, std::int64_t parameters) {
  std::vector<tinynet::Tensor> inputs{x};
  for (const tinynet::Tensor& p : net.parameters()) inputs.push_back(p);
  const auto r = tinynet::gradcheck([&](std::span<const tinynet::Tensor> in) { return net(in[0]); }, inputs);
  INFO("worst input " << r.worst_input << " index " << r.worst_index << ": " << r.analytic << " vs " << r.numeric);
  CHECK(r.checked == x.numel() + parameters);
  CHECK(r.max_rel_error <= 1e-6);
}
