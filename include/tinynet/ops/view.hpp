#pragma once
/// \file
/// view / reshape / flatten / unsqueeze / squeeze: the same storage under a new shape; and
/// narrow / select / permute / transpose, which copy (tinynet tensors are contiguous). All
/// recorded on the tape; the copies run strided_copy (backend/view.hpp).

#include "tinynet/core/detail/tensor.hpp"

namespace tinynet {

/// Free-function spellings, as in torch.
TINYNET_OP Tensor reshape(const Tensor& x, const Shape& shape);
TINYNET_OP Tensor flatten(const Tensor& x, int start_dim = 0, int end_dim = -1);
TINYNET_OP Tensor unsqueeze(const Tensor& x, int dim);
TINYNET_OP Tensor squeeze(const Tensor& x, int dim);
TINYNET_OP Tensor narrow(const Tensor& x, int dim, std::int64_t start, std::int64_t length);
TINYNET_OP Tensor select(const Tensor& x, int dim, std::int64_t index);
TINYNET_OP Tensor transpose(const Tensor& x, int dim0, int dim1);
TINYNET_OP Tensor permute(const Tensor& x, std::initializer_list<std::int64_t> dims);

}  // namespace tinynet

#if !defined(TINYNET_OPS_DECLARED_ONLY)  // the bodies: core/config.hpp, TINYNET_OP

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

// y[c] = x[offset + c . strides] for every multi-index c of y (narrow, select, permute,
// transpose);  dL/dx[offset + c . strides] = dL/dy[c], 0 at the entries y does not read.
class GatherNode final : public autograd::Node {
 public:
  GatherNode(const char* name, const backend::CopyGeometry& back, std::int64_t offset, bool covers_all)
      : name_(name), back_(back), offset_(offset), covers_all_(covers_all) {}
  const char* name() const override { return name_; }
  void backward(const Tensor& gy) override {
    const autograd::GradSlot slot = input_grad(0);
    if (!covers_all_ && !slot.accumulate) Tensor(slot.grad).zero_();
    dispatch_with_bf16(gy, name(), [&]<typename T>(auto be) {
      strided_copy(be, back_, gy.data<T>(), slot.grad.data<T>() + offset_, slot.accumulate);
    });
  }

 private:
  const char* name_;
  backend::CopyGeometry back_;  // from y (contiguous) to x's strided positions
  std::int64_t offset_;
  bool covers_all_;  // y reads every element of x (a permutation)
};

/// gather_strided, recorded: `covers_all` when every element of x is read once.
inline Tensor gather_view(const char* op, const Tensor& x, const Shape& shape, std::int64_t offset,
                          const std::int64_t* strides, bool covers_all) {
  TINYNET_CHECK(Error, x.defined(), op, ": input is an undefined tensor");
  Tensor y = gather_strided(x, shape, offset, strides, op);
  if (autograd::needs_grad(x)) {
    backend::CopyGeometry back;
    back.rank = shape.rank();
    for (int d = 0; d < back.rank; ++d) {
      back.extent[d] = shape[d];
      back.dst_stride[d] = strides[d];
    }
    backend::contiguous_strides(shape, back.src_stride);
    autograd::record(y, std::make_shared<GatherNode>(op, back, offset, covers_all), {&x});
  }
  return y;
}

/// The permutation `dims` of a tensor of shape `s`, checked; the result's shape and strides.
inline Tensor permuted(const char* op, const Tensor& x, std::span<const std::int64_t> dims) {
  TINYNET_CHECK(Error, x.defined(), op, ": input is an undefined tensor");
  const Shape& s = x.shape();
  TINYNET_CHECK(ShapeError, static_cast<int>(dims.size()) == s.rank(), op, ": ", dims.size(), " dims given for shape ",
                s, " of rank ", s.rank());
  std::int64_t in_strides[Shape::kMaxRank], strides[Shape::kMaxRank];
  backend::contiguous_strides(s, in_strides);
  bool seen[Shape::kMaxRank] = {};
  Shape out;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const int d = wrap_dim(op, s, static_cast<int>(dims[i]));
    TINYNET_CHECK(ShapeError, !seen[d], op, ": dim ", dims[i], " appears twice in the permutation for shape ", s);
    seen[d] = true;
    out.push_back(s[d]);
    strides[i] = in_strides[d];
  }
  return gather_view(op, x, out, 0, strides, true);
}

}  // namespace ops::detail

TINYNET_OP Tensor Tensor::unsqueeze(int dim) const {
  const int d = ops::detail::wrap_dim("unsqueeze", shape(), dim, 1);
  Shape out;
  for (int i = 0; i < this->dim(); ++i) {
    if (i == d) out.push_back(1);
    out.push_back(shape()[i]);
  }
  if (d == this->dim()) out.push_back(1);
  return ops::detail::view_as_shape(*this, out);
}

TINYNET_OP Tensor Tensor::squeeze(int dim) const {
  const int d = ops::detail::wrap_dim("squeeze", shape(), dim);
  Shape out;
  for (int i = 0; i < this->dim(); ++i)
    if (i != d || shape()[i] != 1) out.push_back(shape()[i]);
  return ops::detail::view_as_shape(*this, out);
}

TINYNET_OP Tensor Tensor::squeeze() const {
  Shape out;
  for (std::int64_t e : shape())
    if (e != 1) out.push_back(e);
  return ops::detail::view_as_shape(*this, out);
}

TINYNET_OP Tensor Tensor::narrow(int dim, std::int64_t start, std::int64_t length) const {
  const int d = ops::detail::wrap_dim("narrow", shape(), dim);
  const std::int64_t n = shape()[d], from = start < 0 ? start + n : start;
  TINYNET_CHECK(IndexError, from >= 0 && length >= 0 && from + length <= n, "narrow: start ", start, " and length ",
                length, " do not fit in dimension ", dim, " of shape ", shape(), " (size ", n, ")");
  std::int64_t strides[Shape::kMaxRank];
  backend::contiguous_strides(shape(), strides);
  Shape out = shape();
  out[d] = length;
  return ops::detail::gather_view("narrow", *this, out, from * strides[d], strides, length == n);
}

TINYNET_OP Tensor Tensor::select(int dim, std::int64_t index) const {
  const int d = ops::detail::wrap_dim("select", shape(), dim);
  const std::int64_t n = shape()[d], at = index < 0 ? index + n : index;
  TINYNET_CHECK(IndexError, at >= 0 && at < n, "select: index ", index, " is out of range for dimension ", dim,
                " of shape ", shape(), " (size ", n, ")");
  std::int64_t in_strides[Shape::kMaxRank], strides[Shape::kMaxRank];
  backend::contiguous_strides(shape(), in_strides);
  Shape out;
  for (int i = 0; i < this->dim(); ++i)
    if (i != d) {
      strides[out.rank()] = in_strides[i];
      out.push_back(shape()[i]);
    }
  return ops::detail::gather_view("select", *this, out, at * in_strides[d], strides, n == 1);
}

TINYNET_OP Tensor Tensor::permute(std::span<const std::int64_t> dims) const {
  return ops::detail::permuted("permute", *this, dims);
}

TINYNET_OP Tensor Tensor::permute(std::initializer_list<std::int64_t> dims) const {
  return ops::detail::permuted("permute", *this, std::span<const std::int64_t>(dims.begin(), dims.size()));
}

TINYNET_OP Tensor Tensor::transpose(int dim0, int dim1) const {
  const int a = ops::detail::wrap_dim("transpose", shape(), dim0),
            b = ops::detail::wrap_dim("transpose", shape(), dim1);
  std::int64_t dims[Shape::kMaxRank];
  for (int i = 0; i < dim(); ++i) dims[i] = i;
  std::swap(dims[a], dims[b]);
  return ops::detail::permuted("transpose", *this,
                               std::span<const std::int64_t>(dims, static_cast<std::size_t>(dim())));
}

TINYNET_OP Tensor Tensor::view(const Shape& shape) const {
  return ops::detail::view_as_shape(*this, ops::detail::infer_view_shape(this->shape(), shape.dims()));
}

TINYNET_OP Tensor Tensor::view(std::initializer_list<std::int64_t> shape) const {
  return ops::detail::view_as_shape(
      *this, ops::detail::infer_view_shape(this->shape(), std::span<const std::int64_t>(shape.begin(), shape.size())));
}

TINYNET_OP Tensor Tensor::flatten(int start_dim, int end_dim) const {
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

TINYNET_OP Tensor reshape(const Tensor& x, const Shape& shape) { return x.reshape(shape); }

TINYNET_OP Tensor flatten(const Tensor& x, int start_dim, int end_dim) { return x.flatten(start_dim, end_dim); }

TINYNET_OP Tensor unsqueeze(const Tensor& x, int dim) { return x.unsqueeze(dim); }

TINYNET_OP Tensor squeeze(const Tensor& x, int dim) { return x.squeeze(dim); }

TINYNET_OP Tensor narrow(const Tensor& x, int dim, std::int64_t start, std::int64_t length) {
  return x.narrow(dim, start, length);
}

TINYNET_OP Tensor select(const Tensor& x, int dim, std::int64_t index) { return x.select(dim, index); }

TINYNET_OP Tensor transpose(const Tensor& x, int dim0, int dim1) { return x.transpose(dim0, dim1); }

TINYNET_OP Tensor permute(const Tensor& x, std::initializer_list<std::int64_t> dims) { return x.permute(dims); }

}  // namespace tinynet

#endif  // !TINYNET_OPS_DECLARED_ONLY
