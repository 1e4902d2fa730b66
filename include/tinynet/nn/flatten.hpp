#pragma once
/// \file
/// Flatten: [N, d1, d2, ...] -> [N, d1 * d2 * ...].

#include "tinynet/nn/module.hpp"
#include "tinynet/nn/sample.hpp"
#include "tinynet/ops/view.hpp"

namespace tinynet::nn {

class Flatten : public Module<Flatten> {
 public:
  template <class S>
  struct shape {
    using output = Sample<S::numel>;
    static constexpr std::int64_t parameters = 0;
  };
  Tensor forward(const Tensor& x) { return x.flatten(1); }
  template <class V>
  void visit(V&&) {}
};

}  // namespace tinynet::nn
