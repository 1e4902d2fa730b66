#pragma once
/// \file
/// view / reshape / flatten: the same storage under a new shape, recorded on the tape.

#include "tinynet/backend/cpu/elementwise.hpp"
#include "tinynet/backend/cpu/view.hpp"
#include "tinynet/backend/cuda/elementwise.hpp"  // empty in builds without CUDA
#include "tinynet/backend/cuda/view.hpp"         // empty in builds without CUDA
#include "tinynet/backend/view.hpp"
#include "tinynet/ops/common.hpp"

namespace tinynet {

namespace ops::detail {

/// Resolves one -1 extent of `req` against `numel` elements.
inline Shape infer_view_shape(const Shape& from, std::span<const std::int64_t> req) {
  Shape out;
  int infer = -1;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < req.size(); ++i) {
    const std::int64_t e = req[i];
    if (e == -1) {
      TINYNET_CHECK(ShapeError, infer < 0, "view: only one dimension can be -1, got ", Shape(req));
      infer = static_cast<int>(i);
      out.push_back(0);
    } else {
      TINYNET_CHECK(ShapeError, e >= 0, "view: invalid extent ", e, " in requested shape");
      known *= e;
      out.push_back(e);
    }
  }
  if (infer >= 0) {
    TINYNET_CHECK(ShapeError, known != 0 && from.numel() % known == 0, "view: shape ", from, " (", from.numel(),
                  " elements) cannot be viewed with a -1 among extents whose product is ", known);
    out[infer] = from.numel() / known;
  }
  TINYNET_CHECK(ShapeError, out.numel() == from.numel(), "view: shape ", from, " (", from.numel(),
                " elements) cannot be viewed as ", out, " (", out.numel(), " elements)");
  return out;
}

/// A new contiguous tensor of `shape` (x's dtype and device) with y[c] = x[offset + c . strides]
/// for every multi-index c: the copy behind the views that copy and broadcasting. Any
/// dtype; not recorded.
inline Tensor gather_strided(const Tensor& x, const Shape& shape, std::int64_t offset, const std::int64_t* strides,
                             const char* op) {
  Tensor y = new_output(shape, x);
  backend::CopyGeometry g;
  g.rank = shape.rank();
  for (int d = 0; d < g.rank; ++d) {
    g.extent[d] = shape[d];
    g.src_stride[d] = strides[d];
  }
  backend::contiguous_strides(shape, g.dst_stride);
  dispatch_over<DTypes::all>(
      x, op, [&]<typename T>(auto be) { strided_copy(be, g, x.data<T>() + offset, y.data<T>(), false); });
  return y;
}

/// x broadcast to `shape` (which broadcast_shapes gave), as a new contiguous tensor; x
/// itself when it has that shape. Not recorded.
inline Tensor broadcast_copy(const Tensor& x, const Shape& shape, const char* op) {
  if (x.shape() == shape) return x;
  std::int64_t strides[Shape::kMaxRank] = {}, stride = 1;
  for (int d = shape.rank() - 1, dx = x.dim() - 1; dx >= 0; --d, --dx) {
    strides[d] = x.shape()[dx] == 1 ? 0 : stride;
    stride *= x.shape()[dx];
  }
  return gather_strided(x, shape, 0, strides, op);
}

// y = x viewed with another shape; dL/dx = dL/dy viewed with x's shape.
class ViewNode final : public autograd::Node {
 public:
  const char* name() const override { return "view"; }
  void backward(const Tensor& gy) override {
    auto slot = input_grad(0);
    dispatch_with_bf16(gy, name(), [&]<typename T>(auto be) {
      copy_or_add(be, gy.data<T>(), slot.grad.data<T>(), gy.numel(), slot.accumulate);
    });
  }
};

inline Tensor view_as_shape(const Tensor& x, const Shape& shape) {
  Tensor y = alias_with_shape(x, shape);
  if (autograd::needs_grad(x)) autograd::record(y, std::make_shared<ViewNode>(), {&x});
  return y;
}

}  // namespace ops::detail

inline Tensor Tensor::view(const Shape& shape) const {
  return ops::detail::view_as_shape(*this, ops::detail::infer_view_shape(this->shape(), shape.dims()));
}

inline Tensor Tensor::view(std::initializer_list<std::int64_t> shape) const {
  return ops::detail::view_as_shape(
      *this, ops::detail::infer_view_shape(this->shape(), std::span<const std::int64_t>(shape.begin(), shape.size())));
}

inline Tensor Tensor::flatten(int start_dim, int end_dim) const {
  if (dim() == 0) return view(Shape{1});
  const int s = shape().wrap_dim(start_dim), e = shape().wrap_dim(end_dim);
  TINYNET_CHECK(ShapeError, s <= e, "flatten: start_dim ", start_dim, " comes after end_dim ", end_dim, " for shape ",
                shape());
  Shape out;
  for (int d = 0; d < s; ++d) out.push_back(shape()[d]);
  std::int64_t merged = 1;
  for (int d = s; d <= e; ++d) merged *= shape()[d];
  out.push_back(merged);
  for (int d = e + 1; d < dim(); ++d) out.push_back(shape()[d]);
  return ops::detail::view_as_shape(*this, out);
}

/// Free-function spellings, as in torch.
inline Tensor reshape(const Tensor& x, const Shape& shape) { return x.reshape(shape); }
inline Tensor flatten(const Tensor& x, int start_dim = 0, int end_dim = -1) { return x.flatten(start_dim, end_dim); }

}  // namespace tinynet
