#pragma once
/// \file
/// index_select: the entries of a dim picked by an index tensor, into a new tensor; recorded
/// on the tape. Kernels: index_select_forward / _backward (backend/view.hpp).

#include "tinynet/core/detail/tensor.hpp"
#include "tinynet/ops/reduce.hpp"
#include "tinynet/ops/view.hpp"

namespace tinynet {

/// The entries of x along `dim` at the positions `index` holds (a 1-d int64 or int32 tensor
/// on x's device; repeats allowed), in that order: a new tensor whose `dim` has
/// index.numel() entries. An index outside [0, x.size(dim)) is an IndexError (on a CUDA
/// device, at the next synchronisation). The gradient adds up over repeated indices.
TINYNET_OP Tensor index_select(const Tensor& x, int dim, const Tensor& index);

}  // namespace tinynet

#if !defined(TINYNET_OPS_DECLARED_ONLY)  // the bodies: core/config.hpp, TINYNET_OP

#include "tinynet/ops/common.hpp"

namespace tinynet {

namespace ops::detail {

// y[o,k,i] = x[o, index[k], i];  dL/dx[o,r,i] = sum over the k with index[k] == r of
// dL/dy[o,k,i] (repeated indices add up).  Saves index.
class IndexSelectNode final : public autograd::Node {
 public:
  IndexSelectNode(Tensor index, DimSplit split) : index_(std::move(index)), split_(split) {}
  const char* name() const override { return "index_select"; }
  void release() override { index_ = Tensor(); }
  void backward(const Tensor& gy) override {
    const autograd::GradSlot slot = input_grad(0);
    dispatch_with_bf16(gy, name(), [&]<typename T>(auto be) {
      const auto run = [&](const auto* index) {
        index_select_backward(be, gy.data<T>(), index, slot.grad.data<T>(), split_.outer, split_.n, split_.inner,
                              index_.numel(), slot.accumulate);
      };
      if (index_.dtype() == DType::int64)
        run(index_.data<std::int64_t>());
      else
        run(index_.data<std::int32_t>());
    });
  }

 private:
  Tensor index_;
  DimSplit split_;
};

}  // namespace ops::detail

TINYNET_OP Tensor index_select(const Tensor& x, int dim, const Tensor& index) {
  using namespace ops::detail;
  TINYNET_CHECK(Error, x.defined() && index.defined(), "index_select: an operand is an undefined tensor");
  TINYNET_CHECK(TypeError, index.dtype() == DType::int64 || index.dtype() == DType::int32,
                "index_select: index must be an int64 or int32 tensor, got ", index.dtype());
  TINYNET_CHECK(ShapeError, index.dim() <= 1, "index_select: index must be 1-d, got shape ", index.shape());
  TINYNET_CHECK(TypeError, index.device() == x.device(), "index_select: index is on ", index.device(),
                " but the input is on ", x.device());
  const int d = wrap_dim("index_select", x.shape(), dim);
  const DimSplit split = split_at(x.shape(), d);
  Shape out = x.shape();
  out[d] = index.numel();
  Tensor y = new_output(out, x);
  dispatch_over<DTypes::all>(x, "index_select", [&]<typename T>(auto be) {
    const auto run = [&](const auto* idx) {
      index_select_forward(be, x.data<T>(), idx, y.data<T>(), split.outer, split.n, split.inner, index.numel());
    };
    if (index.dtype() == DType::int64)
      run(index.data<std::int64_t>());
    else
      run(index.data<std::int32_t>());
  });
  if (autograd::needs_grad(x)) autograd::record(y, std::make_shared<IndexSelectNode>(index, split), {&x});
  return y;
}

}  // namespace tinynet

#endif  // !TINYNET_OPS_DECLARED_ONLY
