#pragma once
/// \file
/// max_pool2d, avg_pool2d and adaptive_avg_pool2d device kernels (NCHW), mirroring backend/cpu/pool2d.hpp. The
/// backward passes gather (each input element sums the windows that cover it), so
/// overlapping windows need no atomics and results are deterministic.

#include "tinynet/core/config.hpp"

#if defined(TINYNET_WITH_CUDA)

#include <cstdint>
#include <type_traits>

#include "tinynet/backend/backend.hpp"
#include "tinynet/backend/cuda/detail/launch.hpp"
#include "tinynet/backend/pool2d.hpp"

namespace tinynet::backend::cuda {

namespace detail {

/// a * b rounded on its own: nvcc fuses `acc += a * b` into one FMA on the GPU, which rounds
/// once and so differs from the CPU kernel's product-then-sum.
template <typename C>
TINYNET_HOST_DEVICE C product_rn(C a, C b) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<C, float>)
    return __fmul_rn(a, b);
  else
    return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

/// Output rows (or columns) whose window covers input row `i`: [lo, hi).
TINYNET_HOST_DEVICE inline void covering(std::int64_t i, std::int64_t k, std::int64_t s, std::int64_t p,
                                         std::int64_t out, std::int64_t& lo, std::int64_t& hi) {
  const std::int64_t t = i + p;  // window o covers i when o*s <= t < o*s + k
  lo = t - k + 1 <= 0 ? 0 : (t - k + s) / s;
  hi = t / s + 1 < out ? t / s + 1 : out;
}

template <typename T>
struct MaxPoolForward {
  Pool2dGeometry g;
  const T* x;
  T* y;
  std::int32_t* idx;
  TINYNET_HOST_DEVICE void operator()(std::int64_t e) const {
    const std::int64_t pl = e / (g.oh * g.ow), oy = (e / g.ow) % g.oh, ox = e % g.ow;
    const T* in = x + pl * g.h * g.w;
    const std::int64_t y0 = oy * g.s - g.p, x0 = ox * g.s - g.p;
    const std::int64_t i0 = y0 > 0 ? y0 : 0, i1 = y0 + g.k < g.h ? y0 + g.k : g.h;
    const std::int64_t j0 = x0 > 0 ? x0 : 0, j1 = x0 + g.k < g.w ? x0 + g.k : g.w;
    using C = compute_t<T>;  // bfloat16 compared as float; the maximum is stored exactly
    std::int64_t best_i = i0 * g.w + j0;
    C best = static_cast<C>(in[best_i]);
    for (std::int64_t i = i0; i < i1; ++i)
      for (std::int64_t j = j0; j < j1; ++j) {
        const C v = static_cast<C>(in[i * g.w + j]);
        if (!(v <= best)) {  // also true for NaN, which propagates as on the CPU
          best = v;
          best_i = i * g.w + j;
        }
      }
    y[e] = in[best_i];
    idx[e] = static_cast<std::int32_t>(best_i);
  }
};

template <typename T>
struct MaxPoolBackward {
  Pool2dGeometry g;
  const T* gy;
  const std::int32_t* idx;
  T* dx;
  bool accumulate;
  TINYNET_HOST_DEVICE void operator()(std::int64_t e) const {
    const std::int64_t pl = e / (g.h * g.w), iy = (e / g.w) % g.h, ix = e % g.w, flat = iy * g.w + ix;
    std::int64_t oy0, oy1, ox0, ox1;
    covering(iy, g.k, g.s, g.p, g.oh, oy0, oy1);
    covering(ix, g.k, g.s, g.p, g.ow, ox0, ox1);
    using C = compute_t<T>;
    C acc = accumulate ? static_cast<C>(dx[e]) : C(0);
    for (std::int64_t oy = oy0; oy < oy1; ++oy)
      for (std::int64_t ox = ox0; ox < ox1; ++ox) {
        const std::int64_t o = pl * g.oh * g.ow + oy * g.ow + ox;
        if (idx[o] == flat) acc += static_cast<C>(gy[o]);
      }
    dx[e] = T(acc);
  }
};

template <typename T>
struct AvgPoolForward {
  Pool2dGeometry g;
  const T* x;
  T* y;
  TINYNET_HOST_DEVICE void operator()(std::int64_t e) const {
    const std::int64_t pl = e / (g.oh * g.ow), oy = (e / g.ow) % g.oh, ox = e % g.ow;
    const T* in = x + pl * g.h * g.w;
    const std::int64_t y0 = oy * g.s - g.p, x0 = ox * g.s - g.p;
    using C = compute_t<T>;
    C acc = 0;
    for (std::int64_t i = y0 > 0 ? y0 : 0; i < (y0 + g.k < g.h ? y0 + g.k : g.h); ++i)
      for (std::int64_t j = x0 > 0 ? x0 : 0; j < (x0 + g.k < g.w ? x0 + g.k : g.w); ++j)
        acc += static_cast<C>(in[i * g.w + j]);
    y[e] = T(acc * (C(1) / static_cast<C>(g.k * g.k)));
  }
};

template <typename T>
struct AvgPoolBackward {
  Pool2dGeometry g;
  const T* gy;
  T* dx;
  bool accumulate;
  TINYNET_HOST_DEVICE void operator()(std::int64_t e) const {
    const std::int64_t pl = e / (g.h * g.w), iy = (e / g.w) % g.h, ix = e % g.w;
    std::int64_t oy0, oy1, ox0, ox1;
    covering(iy, g.k, g.s, g.p, g.oh, oy0, oy1);
    covering(ix, g.k, g.s, g.p, g.ow, ox0, ox1);
    using C = compute_t<T>;
    const C inv = C(1) / static_cast<C>(g.k * g.k);
    C acc = accumulate ? static_cast<C>(dx[e]) : C(0);
    for (std::int64_t oy = oy0; oy < oy1; ++oy)
      for (std::int64_t ox = ox0; ox < ox1; ++ox)
        acc += product_rn(static_cast<C>(gy[pl * g.oh * g.ow + oy * g.ow + ox]), inv);
    dx[e] = T(acc);
  }
};

template <typename T>
struct AdaptiveAvgPoolForward {
  AdaptivePool2dGeometry g;
  const T* x;
  T* y;
  TINYNET_HOST_DEVICE void operator()(std::int64_t e) const {
    const std::int64_t pl = e / (g.oh * g.ow), oy = (e / g.ow) % g.oh, ox = e % g.ow;
    const T* in = x + pl * g.h * g.w;
    const std::int64_t i0 = adaptive_start(oy, g.h, g.oh), i1 = adaptive_end(oy, g.h, g.oh);
    const std::int64_t j0 = adaptive_start(ox, g.w, g.ow), j1 = adaptive_end(ox, g.w, g.ow);
    using C = compute_t<T>;
    C acc = 0;
    for (std::int64_t i = i0; i < i1; ++i)
      for (std::int64_t j = j0; j < j1; ++j) acc += static_cast<C>(in[i * g.w + j]);
    y[e] = T(acc / static_cast<C>((i1 - i0) * (j1 - j0)));
  }
};

template <typename T>
struct AdaptiveAvgPoolBackward {
  AdaptivePool2dGeometry g;
  const T* gy;
  T* dx;
  bool accumulate;
  TINYNET_HOST_DEVICE void operator()(std::int64_t e) const {
    const std::int64_t pl = e / (g.h * g.w), iy = (e / g.w) % g.h, ix = e % g.w;
    std::int64_t oy0, oy1, ox0, ox1;
    adaptive_covering(iy, g.h, g.oh, oy0, oy1);
    adaptive_covering(ix, g.w, g.ow, ox0, ox1);
    using C = compute_t<T>;
    C acc = accumulate ? static_cast<C>(dx[e]) : C(0);
    for (std::int64_t oy = oy0; oy < oy1; ++oy) {
      const std::int64_t rows = adaptive_end(oy, g.h, g.oh) - adaptive_start(oy, g.h, g.oh);
      for (std::int64_t ox = ox0; ox < ox1; ++ox) {
        const std::int64_t cols = adaptive_end(ox, g.w, g.ow) - adaptive_start(ox, g.w, g.ow);
        acc += static_cast<C>(gy[pl * g.oh * g.ow + oy * g.ow + ox]) / static_cast<C>(rows * cols);
      }
    }
    dx[e] = T(acc);
  }
};

}  // namespace detail

template <typename T>
void max_pool2d_forward(Tag, const Pool2dGeometry& g, const T* x, T* y, std::int32_t* idx) {
  for_each_index(g.planes * g.oh * g.ow, detail::MaxPoolForward<T>{g, x, y, idx});
}

template <typename T>
void max_pool2d_backward(Tag, const Pool2dGeometry& g, const T* gy, const std::int32_t* idx, T* dx, bool accumulate) {
  for_each_index(g.planes * g.h * g.w, detail::MaxPoolBackward<T>{g, gy, idx, dx, accumulate});
}

template <typename T>
void avg_pool2d_forward(Tag, const Pool2dGeometry& g, const T* x, T* y) {
  for_each_index(g.planes * g.oh * g.ow, detail::AvgPoolForward<T>{g, x, y});
}

template <typename T>
void avg_pool2d_backward(Tag, const Pool2dGeometry& g, const T* gy, T* dx, bool accumulate) {
  for_each_index(g.planes * g.h * g.w, detail::AvgPoolBackward<T>{g, gy, dx, accumulate});
}

template <typename T>
void adaptive_avg_pool2d_forward(Tag, const AdaptivePool2dGeometry& g, const T* x, T* y) {
  for_each_index(g.planes * g.oh * g.ow, detail::AdaptiveAvgPoolForward<T>{g, x, y});
}

template <typename T>
void adaptive_avg_pool2d_backward(Tag, const AdaptivePool2dGeometry& g, const T* gy, T* dx, bool accumulate) {
  for_each_index(g.planes * g.h * g.w, detail::AdaptiveAvgPoolBackward<T>{g, gy, dx, accumulate});
}

}  // namespace tinynet::backend::cuda

#endif  // TINYNET_WITH_CUDA
