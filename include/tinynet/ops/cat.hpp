#pragma once
/// \file
/// cat and stack: tensors joined along a dim, into a new tensor; recorded on the tape. The
/// copies are strided_copy (backend/view.hpp), into and out of slices of the result.

#include <algorithm>
#include <span>
#include <vector>

#include "tinynet/core/detail/tensor.hpp"
#include "tinynet/ops/cast.hpp"
#include "tinynet/ops/view.hpp"

namespace tinynet {

/// The tensors joined along `dim` (negative counts from the end): same device and rank, equal
/// extents but along `dim`, in the dtype they promote to (as PyTorch: float32 and float64 give
/// float64). A new tensor; the gradient of each is its slice (in its own dtype).
TINYNET_OP Tensor cat(std::span<const Tensor> tensors, int dim = 0);
TINYNET_OP Tensor cat(std::initializer_list<Tensor> tensors, int dim = 0);

/// The tensors (same shape, dtype and device) stacked along a new dim `dim` (in
/// [-rank-1, rank]): cat of each unsqueezed there.
TINYNET_OP Tensor stack(std::span<const Tensor> tensors, int dim = 0);
TINYNET_OP Tensor stack(std::initializer_list<Tensor> tensors, int dim = 0);

}  // namespace tinynet

#if !defined(TINYNET_OPS_DECLARED_ONLY)  // the bodies: core/config.hpp, TINYNET_OP

#include "tinynet/ops/common.hpp"

namespace tinynet {

namespace ops::detail {

/// The copy of a tensor of shape `part` to or from the slice of a contiguous tensor of shape
/// `whole` that it fills (`into`: from part to whole).
inline backend::CopyGeometry slice_geometry(const Shape& part, const Shape& whole, bool into) {
  backend::CopyGeometry g;
  g.rank = part.rank();
  for (int d = 0; d < g.rank; ++d) g.extent[d] = part[d];
  backend::contiguous_strides(part, into ? g.src_stride : g.dst_stride);
  backend::contiguous_strides(whole, into ? g.dst_stride : g.src_stride);
  return g;
}

// y = [x_0, x_1, ...] along dim;  dL/dx_k = the slice of dL/dy that x_k filled.
class CatNode final : public autograd::Node {
 public:
  CatNode(std::vector<Shape> parts, std::vector<std::int64_t> offsets, Shape whole)
      : parts_(std::move(parts)), offsets_(std::move(offsets)), whole_(whole) {}
  const char* name() const override { return "cat"; }
  void backward(const Tensor& gy) override {
    for (std::size_t k = 0; k < parts_.size(); ++k) {
      if (!needs_input_grad(k)) continue;
      const autograd::GradSlot slot = input_grad(k);
      const backend::CopyGeometry g = slice_geometry(parts_[k], whole_, false);
      dispatch_with_bf16(gy, name(), [&]<typename T>(auto be) {
        strided_copy(be, g, gy.data<T>() + offsets_[k], slot.grad.data<T>(), slot.accumulate);
      });
    }
  }

 private:
  std::vector<Shape> parts_;
  std::vector<std::int64_t> offsets_;  // where each part starts in y, in elements
  Shape whole_;
};

}  // namespace ops::detail

TINYNET_OP Tensor cat(std::span<const Tensor> tensors, int dim) {
  using namespace ops::detail;
  TINYNET_CHECK(ValueError, !tensors.empty(), "cat: expected a non-empty list of tensors");
  for (std::size_t k = 0; k < tensors.size(); ++k)
    TINYNET_CHECK(Error, tensors[k].defined(), "cat: tensor ", k, " is an undefined tensor");
  DType common = tensors[0].dtype();
  for (const Tensor& t : tensors) common = promote_types(common, t.dtype());
  if (std::any_of(tensors.begin(), tensors.end(), [&](const Tensor& t) { return t.dtype() != common; })) {
    std::vector<Tensor> same;
    for (const Tensor& t : tensors) same.push_back(promoted(t, common));
    return cat(same, dim);
  }
  const Tensor& first = tensors[0];
  const int d = wrap_dim("cat", first.shape(), dim);
  Shape whole = first.shape();
  whole[d] = 0;
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    const Tensor& t = tensors[k];
    TINYNET_CHECK(TypeError, t.device() == first.device(), "cat: tensor ", k, " is on ", t.device(),
                  " but tensor 0 is on ", first.device());
    bool fits = t.dim() == first.dim();
    for (int i = 0; fits && i < t.dim(); ++i) fits = i == d || t.shape()[i] == first.shape()[i];
    TINYNET_CHECK(ShapeError, fits, "cat: tensor ", k, " has shape ", t.shape(), " but tensor 0 has shape ",
                  first.shape(), "; they must match in every dimension but ", dim);
    whole[d] += t.shape()[d];
  }
  Tensor y = new_output(whole, first);
  std::int64_t stride = 1;
  for (int i = d + 1; i < whole.rank(); ++i) stride *= whole[i];
  std::vector<Shape> parts;
  std::vector<std::int64_t> offsets;
  std::int64_t at = 0;
  for (const Tensor& t : tensors) {
    parts.push_back(t.shape());
    offsets.push_back(at * stride);
    const backend::CopyGeometry g = slice_geometry(t.shape(), whole, true);
    dispatch_over<DTypes::all>(
        t, "cat", [&]<typename T>(auto be) { strided_copy(be, g, t.data<T>(), y.data<T>() + offsets.back(), false); });
    at += t.shape()[d];
  }
  bool grad = false;
  for (const Tensor& t : tensors) grad = grad || autograd::needs_grad(t);
  if (grad) {
    std::vector<const Tensor*> inputs;
    for (const Tensor& t : tensors) inputs.push_back(&t);
    autograd::record(y, std::make_shared<CatNode>(std::move(parts), std::move(offsets), whole), inputs);
  }
  return y;
}

TINYNET_OP Tensor cat(std::initializer_list<Tensor> tensors, int dim) {
  return cat(std::span<const Tensor>(tensors.begin(), tensors.size()), dim);
}

TINYNET_OP Tensor stack(std::span<const Tensor> tensors, int dim) {
  TINYNET_CHECK(ValueError, !tensors.empty(), "stack: expected a non-empty list of tensors");
  std::vector<Tensor> parts;
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    TINYNET_CHECK(Error, tensors[k].defined(), "stack: tensor ", k, " is an undefined tensor");
    TINYNET_CHECK(ShapeError, tensors[k].shape() == tensors[0].shape(), "stack: tensor ", k, " has shape ",
                  tensors[k].shape(), " but tensor 0 has shape ", tensors[0].shape(), "; they must be equal");
    parts.push_back(tensors[k].unsqueeze(ops::detail::wrap_dim("stack", tensors[0].shape(), dim, 1)));
  }
  return cat(parts, ops::detail::wrap_dim("stack", tensors[0].shape(), dim, 1));
}

TINYNET_OP Tensor stack(std::initializer_list<Tensor> tensors, int dim) {
  return stack(std::span<const Tensor>(tensors.begin(), tensors.size()), dim);
}

}  // namespace tinynet

#endif  // !TINYNET_OPS_DECLARED_ONLY
