#pragma once
/// \file
/// max_pool2d and avg_pool2d kernels (NCHW), parallel over (n, c) planes.

#include <cstdint>

#include "tinynet/backend/cpu/parallel.hpp"

namespace tinynet::backend::cpu {

struct Pool2dGeometry {
  std::int64_t planes, h, w;  // planes = N * C
  std::int64_t k, s, p;       // square kernel, stride, padding
  std::int64_t oh, ow;
};

/// y = max over each window; idx = flat index (within the plane) of the maximum.
template <typename T>
void max_pool2d_forward(const Pool2dGeometry& g, const T* x, T* y, std::int32_t* idx) {
  parallel_for(g.planes, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t pl = lo; pl < hi; ++pl) {
      const T* in = x + pl * g.h * g.w;
      T* out = y + pl * g.oh * g.ow;
      std::int32_t* arg = idx + pl * g.oh * g.ow;
      for (std::int64_t oy = 0; oy < g.oh; ++oy)
        for (std::int64_t ox = 0; ox < g.ow; ++ox) {
          const std::int64_t y0 = oy * g.s - g.p, x0 = ox * g.s - g.p;
          const std::int64_t i0 = std::max<std::int64_t>(y0, 0), i1 = std::min(y0 + g.k, g.h);
          const std::int64_t j0 = std::max<std::int64_t>(x0, 0), j1 = std::min(x0 + g.k, g.w);
          std::int64_t best_i = i0 * g.w + j0;
          T best = in[best_i];
          for (std::int64_t i = i0; i < i1; ++i)
            for (std::int64_t j = j0; j < j1; ++j) {
              const T v = in[i * g.w + j];
              if (!(v <= best)) {  // also true for NaN, which propagates as in PyTorch
                best = v;
                best_i = i * g.w + j;
              }
            }
          out[oy * g.ow + ox] = best;
          arg[oy * g.ow + ox] = static_cast<std::int32_t>(best_i);
        }
    }
  });
}

/// dx[idx] (+)= gy
template <typename T>
void max_pool2d_backward(const Pool2dGeometry& g, const T* gy, const std::int32_t* idx, T* dx, bool accumulate) {
  parallel_for(g.planes, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t pl = lo; pl < hi; ++pl) {
      T* d = dx + pl * g.h * g.w;
      if (!accumulate) std::fill(d, d + g.h * g.w, T(0));
      const T* gp = gy + pl * g.oh * g.ow;
      const std::int32_t* arg = idx + pl * g.oh * g.ow;
      for (std::int64_t o = 0; o < g.oh * g.ow; ++o) d[arg[o]] += gp[o];
    }
  });
}

/// y = mean of each window, padding counted as zeros (PyTorch's count_include_pad).
template <typename T>
void avg_pool2d_forward(const Pool2dGeometry& g, const T* x, T* y) {
  const T inv = T(1) / static_cast<T>(g.k * g.k);
  parallel_for(g.planes, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t pl = lo; pl < hi; ++pl) {
      const T* in = x + pl * g.h * g.w;
      T* out = y + pl * g.oh * g.ow;
      for (std::int64_t oy = 0; oy < g.oh; ++oy)
        for (std::int64_t ox = 0; ox < g.ow; ++ox) {
          const std::int64_t y0 = oy * g.s - g.p, x0 = ox * g.s - g.p;
          T acc = 0;
          for (std::int64_t i = std::max<std::int64_t>(y0, 0); i < std::min(y0 + g.k, g.h); ++i)
            for (std::int64_t j = std::max<std::int64_t>(x0, 0); j < std::min(x0 + g.k, g.w); ++j)
              acc += in[i * g.w + j];
          out[oy * g.ow + ox] = acc * inv;
        }
    }
  });
}

/// dx (+)= gy spread evenly over each window.
template <typename T>
void avg_pool2d_backward(const Pool2dGeometry& g, const T* gy, T* dx, bool accumulate) {
  const T inv = T(1) / static_cast<T>(g.k * g.k);
  parallel_for(g.planes, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t pl = lo; pl < hi; ++pl) {
      T* d = dx + pl * g.h * g.w;
      if (!accumulate) std::fill(d, d + g.h * g.w, T(0));
      const T* gp = gy + pl * g.oh * g.ow;
      for (std::int64_t oy = 0; oy < g.oh; ++oy)
        for (std::int64_t ox = 0; ox < g.ow; ++ox) {
          const std::int64_t y0 = oy * g.s - g.p, x0 = ox * g.s - g.p;
          const T v = gp[oy * g.ow + ox] * inv;
          for (std::int64_t i = std::max<std::int64_t>(y0, 0); i < std::min(y0 + g.k, g.h); ++i)
            for (std::int64_t j = std::max<std::int64_t>(x0, 0); j < std::min(x0 + g.k, g.w); ++j) d[i * g.w + j] += v;
        }
    }
  });
}

}  // namespace tinynet::backend::cpu
