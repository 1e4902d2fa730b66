#pragma once
/// \file
/// max_pool2d and avg_pool2d kernels (NCHW), parallel over (n, c) planes.

#include <algorithm>
#include <cstdint>

#include "tinynet/backend/backend.hpp"
#include "tinynet/backend/cpu/kernels_for_isa.hpp"
#include "tinynet/backend/pool2d.hpp"
#include "tinynet/core/parallel.hpp"

namespace tinynet::backend::cpu {

/// y = max over each window; idx = flat index (within the plane) of the maximum.
template <typename T>
void max_pool2d_forward(Tag, const Pool2dGeometry& g, const T* x, T* y, std::int32_t* idx) {
  on_isa([&](auto level) { max_pool2d_forward(level, g, x, y, idx); });
}

/// dx[idx] (+)= gy
template <typename T>
void max_pool2d_backward(Tag, const Pool2dGeometry& g, const T* gy, const std::int32_t* idx, T* dx, bool accumulate) {
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
void avg_pool2d_forward(Tag, const Pool2dGeometry& g, const T* x, T* y) {
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
void avg_pool2d_backward(Tag, const Pool2dGeometry& g, const T* gy, T* dx, bool accumulate) {
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
