#pragma once
/// \file
/// Comparisons (eq, ne, lt, le, gt, ge and their operators), giving bool tensors; not
/// differentiable.

#include <cmath>

#include "tinynet/backend/compare.hpp"
#include "tinynet/backend/cpu/elementwise.hpp"
#include "tinynet/backend/cuda/elementwise.hpp"  // empty in builds without CUDA
#include "tinynet/core/creation.hpp"
#include "tinynet/ops/common.hpp"
#include "tinynet/ops/elementwise.hpp"

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

}  // namespace ops::detail

/// a == b elementwise, broadcasting: a bool tensor. Operands of different dtypes compare in
/// the wider (promote_types); a scalar in x's dtype (int64 or float32 beside an integer x).
inline Tensor eq(const Tensor& a, const Tensor& b) { return ops::detail::compare(backend::Comparison::eq, a, b); }
/// a != b elementwise (true where either is NaN), as eq.
inline Tensor ne(const Tensor& a, const Tensor& b) { return ops::detail::compare(backend::Comparison::ne, a, b); }
/// a < b elementwise, as eq.
inline Tensor lt(const Tensor& a, const Tensor& b) { return ops::detail::compare(backend::Comparison::lt, a, b); }
/// a <= b elementwise, as eq.
inline Tensor le(const Tensor& a, const Tensor& b) { return ops::detail::compare(backend::Comparison::le, a, b); }
/// a > b elementwise, as eq.
inline Tensor gt(const Tensor& a, const Tensor& b) { return ops::detail::compare(backend::Comparison::gt, a, b); }
/// a >= b elementwise, as eq.
inline Tensor ge(const Tensor& a, const Tensor& b) { return ops::detail::compare(backend::Comparison::ge, a, b); }

/// x == s elementwise: a bool tensor.
inline Tensor eq(const Tensor& x, double s) { return ops::detail::compare(backend::Comparison::eq, x, s); }
inline Tensor ne(const Tensor& x, double s) { return ops::detail::compare(backend::Comparison::ne, x, s); }
inline Tensor lt(const Tensor& x, double s) { return ops::detail::compare(backend::Comparison::lt, x, s); }
inline Tensor le(const Tensor& x, double s) { return ops::detail::compare(backend::Comparison::le, x, s); }
inline Tensor gt(const Tensor& x, double s) { return ops::detail::compare(backend::Comparison::gt, x, s); }
inline Tensor ge(const Tensor& x, double s) { return ops::detail::compare(backend::Comparison::ge, x, s); }

inline Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
inline Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
inline Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
inline Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
inline Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
inline Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
inline Tensor operator==(const Tensor& x, double s) { return eq(x, s); }
inline Tensor operator!=(const Tensor& x, double s) { return ne(x, s); }
inline Tensor operator<(const Tensor& x, double s) { return lt(x, s); }
inline Tensor operator<=(const Tensor& x, double s) { return le(x, s); }
inline Tensor operator>(const Tensor& x, double s) { return gt(x, s); }
inline Tensor operator>=(const Tensor& x, double s) { return ge(x, s); }
inline Tensor operator==(double s, const Tensor& x) { return eq(x, s); }
inline Tensor operator!=(double s, const Tensor& x) { return ne(x, s); }
inline Tensor operator<(double s, const Tensor& x) { return gt(x, s); }
inline Tensor operator<=(double s, const Tensor& x) { return ge(x, s); }
inline Tensor operator>(double s, const Tensor& x) { return lt(x, s); }
inline Tensor operator>=(double s, const Tensor& x) { return le(x, s); }

}  // namespace tinynet
