#pragma once
/// \file
/// Elementwise kernels: index loops, binary maps with broadcasting, and the reduction of
/// a broadcast gradient back to its input's shape.

#include <algorithm>
#include <array>
#include <cstdint>

#include "tinynet/backend/backend.hpp"
#include "tinynet/backend/elementwise.hpp"
#include "tinynet/core/parallel.hpp"
#include "tinynet/core/shape.hpp"

namespace tinynet::backend::cpu {

/// f(i) for every i in [0, n), in parallel chunks (the CPU's counterpart of a device
/// kernel launch: `f` is one of the per-element rules in backend/*.hpp).
template <typename F>
void for_each_index(Tag, std::int64_t n, const F& f) {
  parallel_for(n, kElementwiseGrain, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) f(i);
  });
}

namespace detail {

/// A unary op's backward over [lo, hi): the saved tensors chosen at compile time, everything
/// a local and `accumulate` tested once, so that the loop vectorizes (dx may be g itself,
/// never offset from it). Through the generic loop, ReLU's backward was a branch per
/// element, 20 times slower than its forward on random signs (docs/performance.md).
template <typename Op, typename T>
void unary_backward_run(const UnaryBackward<Op, T>& f, std::int64_t lo, std::int64_t hi) {
  using C = compute_t<T>;
  const Op op = f.op;
  const T *x = f.x, *y = f.y, *g = f.g;
  T* dx = f.dx;
  const auto d = [&](std::int64_t i) {
    return op.template backward<C>(static_cast<C>(g[i]), Op::kSavesX ? static_cast<C>(x[i]) : C(0),
                                   Op::kSavesY ? static_cast<C>(y[i]) : C(0));
  };
  if (f.accumulate) {
    TINYNET_INDEPENDENT_ITERATIONS for (std::int64_t i = lo; i < hi; ++i) dx[i] = T(static_cast<C>(dx[i]) + d(i));
  } else {
    TINYNET_INDEPENDENT_ITERATIONS for (std::int64_t i = lo; i < hi; ++i) dx[i] = T(d(i));
  }
}

}  // namespace detail

/// A unary op's backward: unary_backward_run per parallel chunk.
template <typename Op, typename T>
void for_each_index(Tag, std::int64_t n, const UnaryBackward<Op, T>& f) {
  parallel_for(n, kElementwiseGrain, [&f](std::int64_t lo, std::int64_t hi) { detail::unary_backward_run(f, lo, hi); });
}

/// add_relu's backward: ReLU's backward loop for each operand's gradient over blocks of y
/// and gy small enough to stay in L1 for the second loop (a thread's chunk can be far
/// larger).
template <typename T>
void for_each_index(Tag, std::int64_t n, const AddReluBackward<T>& f) {
  constexpr std::int64_t kBlock = 2048;  // 8 KB of each of y and gy in float32
  using Grad = UnaryBackward<Relu, T>;
  parallel_for(n, kElementwiseGrain, [&f](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t from = lo; from < hi; from += kBlock) {
      const std::int64_t to = std::min(hi, from + kBlock);
      if (f.da != nullptr) detail::unary_backward_run(Grad{{}, nullptr, f.y, f.g, f.da, f.acc_a}, from, to);
      if (f.db != nullptr) detail::unary_backward_run(Grad{{}, nullptr, f.y, f.g, f.db, f.acc_b}, from, to);
    }
  });
}

/// out[i] = f(a[i], b[i]) (same shapes), writing or adding into out. U is T, or bool for
/// the comparisons.
template <typename T, typename U, typename F>
void zip_map(Tag, const T* a, const T* b, U* out, std::int64_t n, bool accumulate, F f) {
  parallel_for(n, kElementwiseGrain, [&](std::int64_t lo, std::int64_t hi) {
    if (accumulate)
      for (std::int64_t i = lo; i < hi; ++i) out[i] = static_cast<U>(out[i] + f(a[i], b[i]));
    else
      for (std::int64_t i = lo; i < hi; ++i) out[i] = f(a[i], b[i]);
  });
}

/// dst = src, or dst += src when accumulating (how a backward hands on an unchanged gradient).
template <typename T>
void copy_or_add(Tag, const T* src, T* dst, std::int64_t n, bool accumulate) {
  using C = compute_t<T>;  // bfloat16 sums in float, rounded once
  parallel_for(n, kElementwiseGrain, [&](std::int64_t lo, std::int64_t hi) {
    if (accumulate)
      for (std::int64_t i = lo; i < hi; ++i) dst[i] = T(static_cast<C>(dst[i]) + static_cast<C>(src[i]));
    else
      std::copy(src + lo, src + hi, dst + lo);  // a memmove, bfloat16 too
  });
}

/// Strides (in elements) that read `in` as if it had shape `out` (numpy broadcasting:
/// dims of extent 1, and missing leading dims, get stride 0).
inline std::array<std::int64_t, Shape::kMaxRank> broadcast_strides(const Shape& in, const Shape& out) {
  std::array<std::int64_t, Shape::kMaxRank> s{};
  std::int64_t stride = 1;
  for (int d = out.rank() - 1, di = in.rank() - 1; d >= 0; --d, --di) {
    if (di >= 0 && in[di] != 1) {
      s[static_cast<std::size_t>(d)] = stride;
      stride *= in[di];
    } else if (di >= 0) {
      s[static_cast<std::size_t>(d)] = 0;
    }
  }
  return s;
}

namespace detail {

/// Offset of flat output index `i` into an input with broadcast strides `s`.
inline std::int64_t broadcast_offset(std::int64_t i, const Shape& out,
                                     const std::array<std::int64_t, Shape::kMaxRank>& s) {
  std::int64_t off = 0;
  for (int d = out.rank() - 1; d >= 0; --d) {
    const std::int64_t e = out[d];
    off += (i % e) * s[static_cast<std::size_t>(d)];
    i /= e;
  }
  return off;
}

}  // namespace detail

/// out[i] = f(a[bcast i], b[bcast i]) over the broadcast shape `os` (U as for zip_map).
template <typename T, typename U, typename F>
void broadcast_map(Tag, const T* a, const Shape& as, const T* b, const Shape& bs, U* out, const Shape& os, F f) {
  const auto sa = broadcast_strides(as, os), sb = broadcast_strides(bs, os);
  const std::int64_t inner = os.rank() ? os[os.rank() - 1] : 1;
  const std::int64_t rows = inner ? os.numel() / inner : 0;
  const std::int64_t ia = os.rank() ? sa[static_cast<std::size_t>(os.rank() - 1)] : 0;
  const std::int64_t ib = os.rank() ? sb[static_cast<std::size_t>(os.rank() - 1)] : 0;
  parallel_for(rows, std::max<std::int64_t>(1, kElementwiseGrain / std::max<std::int64_t>(inner, 1)),
               [&](std::int64_t lo, std::int64_t hi) {
                 for (std::int64_t r = lo; r < hi; ++r) {
                   const T* pa = a + detail::broadcast_offset(r * inner, os, sa);
                   const T* pb = b + detail::broadcast_offset(r * inner, os, sb);
                   U* po = out + r * inner;
                   for (std::int64_t j = 0; j < inner; ++j) po[j] = f(pa[j * ia], pb[j * ib]);
                 }
               });
}

/// dst (shape ds) (+)= src (shape ss) summed over the dims along which ds was broadcast to ss.
template <typename T>
void sum_to(Tag tag, const T* src, const Shape& ss, T* dst, const Shape& ds, bool accumulate) {
  if (ss.numel() == ds.numel()) {  // nothing was broadcast: a copy (add's gradient, a residual's)
    copy_or_add(tag, src, dst, ds.numel(), accumulate);
    return;
  }
  const std::int64_t dn = ds.numel();
  if (!accumulate)
    for (std::int64_t i = 0; i < dn; ++i) dst[i] = T(0);
  const auto sd = broadcast_strides(ds, ss);
  for (std::int64_t i = 0, n = ss.numel(); i < n; ++i) dst[detail::broadcast_offset(i, ss, sd)] += src[i];
}

}  // namespace tinynet::backend::cpu
