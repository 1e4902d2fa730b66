#pragma once
/// \file
/// Comparisons (eq, ne, lt, le, gt, ge and their operators), giving bool tensors (not
/// differentiable), and where(), which selects by such a mask.

#include <cmath>

#include "tinynet/core/creation.hpp"
#include "tinynet/core/detail/tensor.hpp"
#include "tinynet/ops/cast.hpp"
#include "tinynet/ops/elementwise.hpp"
#include "tinynet/ops/view.hpp"

namespace tinynet {

/// cond ? a : b elementwise, the three broadcast together (numpy rules). cond must be bool;
/// a and b compute in the dtype they promote to (bfloat16 through float32, rounded back
/// exactly). The gradient flows to a where cond holds and to b elsewhere, summed over the
/// dims each was broadcast along.
TINYNET_OP Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);

/// where(cond, a, s) with the scalar s in a's dtype.
TINYNET_OP Tensor where(const Tensor& cond, const Tensor& a, double s);

/// where(cond, s, b) with the scalar s in b's dtype.
TINYNET_OP Tensor where(const Tensor& cond, double s, const Tensor& b);

/// a == b elementwise, broadcasting: a bool tensor. Operands of different dtypes compare in
/// the wider (promote_types); a scalar in x's dtype (int64 or float32 beside an integer x).
TINYNET_OP Tensor eq(const Tensor& a, const Tensor& b);

/// a != b elementwise (true where either is NaN), as eq.
TINYNET_OP Tensor ne(const Tensor& a, const Tensor& b);

/// a < b elementwise, as eq.
TINYNET_OP Tensor lt(const Tensor& a, const Tensor& b);

/// a <= b elementwise, as eq.
TINYNET_OP Tensor le(const Tensor& a, const Tensor& b);

/// a > b elementwise, as eq.
TINYNET_OP Tensor gt(const Tensor& a, const Tensor& b);

/// a >= b elementwise, as eq.
TINYNET_OP Tensor ge(const Tensor& a, const Tensor& b);

/// x == s elementwise: a bool tensor.
TINYNET_OP Tensor eq(const Tensor& x, double s);
TINYNET_OP Tensor ne(const Tensor& x, double s);
TINYNET_OP Tensor lt(const Tensor& x, double s);
TINYNET_OP Tensor le(const Tensor& x, double s);
TINYNET_OP Tensor gt(const Tensor& x, double s);
TINYNET_OP Tensor ge(const Tensor& x, double s);
TINYNET_OP Tensor operator==(const Tensor& a, const Tensor& b);
TINYNET_OP Tensor operator!=(const Tensor& a, const Tensor& b);
TINYNET_OP Tensor operator<(const Tensor& a, const Tensor& b);
TINYNET_OP Tensor operator<=(const Tensor& a, const Tensor& b);
TINYNET_OP Tensor operator>(const Tensor& a, const Tensor& b);
TINYNET_OP Tensor operator>=(const Tensor& a, const Tensor& b);
TINYNET_OP Tensor operator==(const Tensor& x, double s);
TINYNET_OP Tensor operator!=(const Tensor& x, double s);
TINYNET_OP Tensor operator<(const Tensor& x, double s);
TINYNET_OP Tensor operator<=(const Tensor& x, double s);
TINYNET_OP Tensor operator>(const Tensor& x, double s);
TINYNET_OP Tensor operator>=(const Tensor& x, double s);
TINYNET_OP Tensor operator==(double s, const Tensor& x);
TINYNET_OP Tensor operator!=(double s, const Tensor& x);
TINYNET_OP Tensor operator<(double s, const Tensor& x);
TINYNET_OP Tensor operator<=(double s, const Tensor& x);
TINYNET_OP Tensor operator>(double s, const Tensor& x);
TINYNET_OP Tensor operator>=(double s, const Tensor& x);

}  // namespace tinynet

#if !defined(TINYNET_OPS_DECLARED_ONLY)  // the bodies: core/config.hpp, TINYNET_OP

#include "tinynet/backend/compare.hpp"
#include "tinynet/backend/cpu/elementwise.hpp"
#include "tinynet/backend/cuda/elementwise.hpp"  // empty in builds without CUDA
#include "tinynet/ops/common.hpp"

namespace tinynet {

namespace ops::detail {

using backend::Comparison;

inline const char* comparison_name(Comparison op) {
  constexpr const char* names[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  return names[static_cast<int>(op)];
}

/// `t` in `dtype` (itself when it has it already); a copy, off the tape.
inline Tensor as_dtype(const Tensor& t, DType dtype) { return t.dtype() == dtype ? t : t.to(dtype); }

// out = a op b, broadcasting, in the dtype both promote to (bfloat16 through float32, exact).
inline Tensor compare(Comparison op, const Tensor& a, const Tensor& b) {
  const char* name = comparison_name(op);
  TINYNET_CHECK(Error, a.defined() && b.defined(), name, ": an operand is an undefined tensor");
  TINYNET_CHECK(TypeError, a.device() == b.device(), name, ": the second operand is on ", b.device(),
                " but the first is on ", a.device());
  DType common = promote_types(a.dtype(), b.dtype());
  if (common == DType::bfloat16) common = DType::float32;
  const Tensor ca = as_dtype(a, common), cb = as_dtype(b, common);
  const Shape os = broadcast_shapes(a.shape(), b.shape(), name);
  Tensor out(os, {DType::bool_, a.device(), false});
  dispatch_over<DTypes::comparable>(ca, name, [&]<typename T>(auto be) {
    broadcast_or_zip(be, ca.data<T>(), ca.shape(), cb.data<T>(), cb.shape(), out.data<bool>(), os,
                     backend::Compare{op});
  });
  return out;
}

/// The scalar `s` as a rank-0 tensor of the dtype PyTorch compares `x` with it in: x's own
/// for floating x; int64 for an integral s beside integer or bool x; else float32.
inline Tensor scalar_operand(const Tensor& x, double s) {
  TINYNET_CHECK(Error, x.defined(), "comparison with an undefined tensor");
  DType t = x.dtype();
  if (is_integral(t)) t = std::trunc(s) == s && std::abs(s) < 0x1p63 ? DType::int64 : DType::float32;
  return full(Shape{}, s, {t, x.device(), false});
}

inline Tensor compare(Comparison op, const Tensor& x, double s) { return compare(op, x, scalar_operand(x, s)); }

// y = where(c, a, b);  dL/da = sum_to(c ? dL/dy : 0, a.shape), dL/db = sum_to(c ? 0 : dL/dy, b.shape).
// Saves c, broadcast to y's shape.
class WhereNode final : public autograd::Node {
 public:
  WhereNode(Tensor cond, Shape a, Shape b) : cond_(std::move(cond)), shapes_{a, b} {}
  const char* name() const override { return "where"; }
  void release() override { cond_ = Tensor(); }
  void backward(const Tensor& gy) override {
    for (std::size_t i = 0; i < 2; ++i) {
      if (!needs_input_grad(i)) continue;
      const autograd::GradSlot slot = input_grad(i);
      const bool direct = shapes_[i] == gy.shape();
      const Tensor branch = direct ? slot.grad : new_output(gy.shape(), gy);
      dispatch(gy, name(), [&]<typename T>(auto be) {
        for_each_index(be, gy.numel(),
                       backend::WhereGrad<T>{cond_.data<bool>(), gy.data<T>(), branch.data<T>(), i == 0,
                                             direct && slot.accumulate});
        if (!direct) sum_to(be, branch.data<T>(), gy.shape(), slot.grad.data<T>(), shapes_[i], slot.accumulate);
      });
    }
  }

 private:
  Tensor cond_;
  Shape shapes_[2];
};

}  // namespace ops::detail

TINYNET_OP Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  using namespace ops::detail;
  TINYNET_CHECK(Error, cond.defined() && a.defined() && b.defined(), "where: an operand is an undefined tensor");
  TINYNET_CHECK(TypeError, cond.dtype() == DType::bool_, "where: condition must be a bool tensor, got ", cond.dtype());
  TINYNET_CHECK(TypeError, a.device() == b.device() && cond.device() == a.device(), "where: operands on ",
                cond.device(), ", ", a.device(), " and ", b.device(), "; all must be on one device");
  const DType common = promote_types(a.dtype(), b.dtype());
  if (common == DType::bfloat16)
    return cast(where(cond, promoted(a, DType::float32), promoted(b, DType::float32)), DType::bfloat16);
  const Tensor ca = promoted(a, common), cb = promoted(b, common);
  const Shape os = broadcast_shapes(cond.shape(), broadcast_shapes(a.shape(), b.shape(), "where"), "where");
  const Tensor c = broadcast_copy(cond, os, "where"), ea = broadcast_copy(ca, os, "where"),
               eb = broadcast_copy(cb, os, "where");
  Tensor out = new_output(os, ca);
  dispatch_over<DTypes::all>(ca, "where", [&]<typename T>(auto be) {
    for_each_index(be, os.numel(), backend::WhereSelect<T>{c.data<bool>(), ea.data<T>(), eb.data<T>(), out.data<T>()});
  });
  if (autograd::any_needs_grad(ca, cb))
    autograd::record(out, std::make_shared<WhereNode>(c, ca.shape(), cb.shape()), {&ca, &cb});
  return out;
}

TINYNET_OP Tensor where(const Tensor& cond, const Tensor& a, double s) {
  TINYNET_CHECK(Error, a.defined(), "where: an operand is an undefined tensor");
  return where(cond, a, full(Shape{}, s, {a.dtype(), a.device(), false}));
}

TINYNET_OP Tensor where(const Tensor& cond, double s, const Tensor& b) {
  TINYNET_CHECK(Error, b.defined(), "where: an operand is an undefined tensor");
  return where(cond, full(Shape{}, s, {b.dtype(), b.device(), false}), b);
}

TINYNET_OP Tensor eq(const Tensor& a, const Tensor& b) { return ops::detail::compare(backend::Comparison::eq, a, b); }

TINYNET_OP Tensor ne(const Tensor& a, const Tensor& b) { return ops::detail::compare(backend::Comparison::ne, a, b); }

TINYNET_OP Tensor lt(const Tensor& a, const Tensor& b) { return ops::detail::compare(backend::Comparison::lt, a, b); }

TINYNET_OP Tensor le(const Tensor& a, const Tensor& b) { return ops::detail::compare(backend::Comparison::le, a, b); }

TINYNET_OP Tensor gt(const Tensor& a, const Tensor& b) { return ops::detail::compare(backend::Comparison::gt, a, b); }

TINYNET_OP Tensor ge(const Tensor& a, const Tensor& b) { return ops::detail::compare(backend::Comparison::ge, a, b); }

TINYNET_OP Tensor eq(const Tensor& x, double s) { return ops::detail::compare(backend::Comparison::eq, x, s); }

TINYNET_OP Tensor ne(const Tensor& x, double s) { return ops::detail::compare(backend::Comparison::ne, x, s); }

TINYNET_OP Tensor lt(const Tensor& x, double s) { return ops::detail::compare(backend::Comparison::lt, x, s); }

TINYNET_OP Tensor le(const Tensor& x, double s) { return ops::detail::compare(backend::Comparison::le, x, s); }

TINYNET_OP Tensor gt(const Tensor& x, double s) { return ops::detail::compare(backend::Comparison::gt, x, s); }

TINYNET_OP Tensor ge(const Tensor& x, double s) { return ops::detail::compare(backend::Comparison::ge, x, s); }

TINYNET_OP Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }

TINYNET_OP Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }

TINYNET_OP Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }

TINYNET_OP Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }

TINYNET_OP Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }

TINYNET_OP Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }

TINYNET_OP Tensor operator==(const Tensor& x, double s) { return eq(x, s); }

TINYNET_OP Tensor operator!=(const Tensor& x, double s) { return ne(x, s); }

TINYNET_OP Tensor operator<(const Tensor& x, double s) { return lt(x, s); }

TINYNET_OP Tensor operator<=(const Tensor& x, double s) { return le(x, s); }

TINYNET_OP Tensor operator>(const Tensor& x, double s) { return gt(x, s); }

TINYNET_OP Tensor operator>=(const Tensor& x, double s) { return ge(x, s); }

TINYNET_OP Tensor operator==(double s, const Tensor& x) { return eq(x, s); }

TINYNET_OP Tensor operator!=(double s, const Tensor& x) { return ne(x, s); }

TINYNET_OP Tensor operator<(double s, const Tensor& x) { return gt(x, s); }

TINYNET_OP Tensor operator<=(double s, const Tensor& x) { return ge(x, s); }

TINYNET_OP Tensor operator>(double s, const Tensor& x) { return lt(x, s); }

TINYNET_OP Tensor operator>=(double s, const Tensor& x) { return le(x, s); }

}  // namespace tinynet

#endif  // !TINYNET_OPS_DECLARED_ONLY
