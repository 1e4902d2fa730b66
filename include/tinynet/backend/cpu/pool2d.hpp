#pragma once
/// \file
/// max_pool2d, avg_pool2d and adaptive_avg_pool2d kernels (NCHW), parallel over (n, c) planes.

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

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

namespace detail {

/// Runs add(plane) to sum a backward's contributions into the n elements at d (zeroed
/// first unless `accumulate`). bfloat16 planes are summed in a float copy and rounded once
/// at the end, as the device kernels (which gather) round them.
template <typename T, typename F>
void add_into_plane(T* d, std::int64_t n, bool accumulate, F&& add) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    thread_local std::vector<float> sums;
    sums.resize(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i)
      sums[static_cast<std::size_t>(i)] = accumulate ? static_cast<float>(d[i]) : 0.0f;
    add(sums.data());
    for (std::int64_t i = 0; i < n; ++i) d[i] = bfloat16(sums[static_cast<std::size_t>(i)]);
  } else {
    if (!accumulate) std::fill(d, d + n, T(0));
    add(d);
  }
}

}  // namespace detail

/// dx[idx] (+)= gy
template <typename T>
void max_pool2d_backward(Tag, const Pool2dGeometry& g, const T* gy, const std::int32_t* idx, T* dx, bool accumulate) {
  using C = compute_t<T>;
  parallel_for(g.planes, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t pl = lo; pl < hi; ++pl) {
      const T* gp = gy + pl * g.oh * g.ow;
      const std::int32_t* arg = idx + pl * g.oh * g.ow;
      if (std::is_same_v<T, bfloat16> && g.k <= g.s) {
        // Windows that do not overlap send each input at most one gradient: it goes into
        // the bfloat16 plane directly, rounded once as the float plane would round it.
        T* d = dx + pl * g.h * g.w;
        if (!accumulate) std::fill(d, d + g.h * g.w, T(0));
        for (std::int64_t o = 0; o < g.oh * g.ow; ++o)
          d[arg[o]] = accumulate ? T(static_cast<C>(d[arg[o]]) + static_cast<C>(gp[o])) : gp[o];
        continue;
      }
      detail::add_into_plane(dx + pl * g.h * g.w, g.h * g.w, accumulate, [&](C* d) {
        for (std::int64_t o = 0; o < g.oh * g.ow; ++o) d[arg[o]] += static_cast<C>(gp[o]);
      });
    }
  });
}

/// y = mean of each window, padding counted as zeros (PyTorch's count_include_pad).
template <typename T>
void avg_pool2d_forward(Tag, const Pool2dGeometry& g, const T* x, T* y) {
  using C = compute_t<T>;  // bfloat16: sums in float, rounded once
  const C inv = C(1) / static_cast<C>(g.k * g.k);
  parallel_for(g.planes, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t pl = lo; pl < hi; ++pl) {
      const T* in = x + pl * g.h * g.w;
      T* out = y + pl * g.oh * g.ow;
      for (std::int64_t oy = 0; oy < g.oh; ++oy)
        for (std::int64_t ox = 0; ox < g.ow; ++ox) {
          const std::int64_t y0 = oy * g.s - g.p, x0 = ox * g.s - g.p;
          C acc = 0;
          for (std::int64_t i = std::max<std::int64_t>(y0, 0); i < std::min(y0 + g.k, g.h); ++i)
            for (std::int64_t j = std::max<std::int64_t>(x0, 0); j < std::min(x0 + g.k, g.w); ++j)
              acc += static_cast<C>(in[i * g.w + j]);
          out[oy * g.ow + ox] = T(acc * inv);
        }
    }
  });
}

/// dx (+)= gy spread evenly over each window.
template <typename T>
void avg_pool2d_backward(Tag, const Pool2dGeometry& g, const T* gy, T* dx, bool accumulate) {
  using C = compute_t<T>;
  const C inv = C(1) / static_cast<C>(g.k * g.k);
  parallel_for(g.planes, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t pl = lo; pl < hi; ++pl) {
      const T* gp = gy + pl * g.oh * g.ow;
      detail::add_into_plane(dx + pl * g.h * g.w, g.h * g.w, accumulate, [&](C* d) {
        for (std::int64_t oy = 0; oy < g.oh; ++oy)
          for (std::int64_t ox = 0; ox < g.ow; ++ox) {
            const std::int64_t y0 = oy * g.s - g.p, x0 = ox * g.s - g.p;
            const C v = static_cast<C>(gp[oy * g.ow + ox]) * inv;
            for (std::int64_t i = std::max<std::int64_t>(y0, 0); i < std::min(y0 + g.k, g.h); ++i)
              for (std::int64_t j = std::max<std::int64_t>(x0, 0); j < std::min(x0 + g.k, g.w); ++j)
                d[i * g.w + j] += v;
          }
      });
    }
  });
}

/// y = mean of each adaptive window (backend/pool2d.hpp gives the windows).
template <typename T>
void adaptive_avg_pool2d_forward(Tag, const AdaptivePool2dGeometry& g, const T* x, T* y) {
  using C = compute_t<T>;
  parallel_for(g.planes, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t pl = lo; pl < hi; ++pl) {
      const T* in = x + pl * g.h * g.w;
      T* out = y + pl * g.oh * g.ow;
      for (std::int64_t oy = 0; oy < g.oh; ++oy) {
        const std::int64_t i0 = adaptive_start(oy, g.h, g.oh), i1 = adaptive_end(oy, g.h, g.oh);
        for (std::int64_t ox = 0; ox < g.ow; ++ox) {
          const std::int64_t j0 = adaptive_start(ox, g.w, g.ow), j1 = adaptive_end(ox, g.w, g.ow);
          C acc = 0;
          for (std::int64_t i = i0; i < i1; ++i)
            for (std::int64_t j = j0; j < j1; ++j) acc += static_cast<C>(in[i * g.w + j]);
          out[oy * g.ow + ox] = T(acc / static_cast<C>((i1 - i0) * (j1 - j0)));
        }
      }
    }
  });
}

/// dx (+)= gy spread evenly over each adaptive window.
template <typename T>
void adaptive_avg_pool2d_backward(Tag, const AdaptivePool2dGeometry& g, const T* gy, T* dx, bool accumulate) {
  using C = compute_t<T>;
  parallel_for(g.planes, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t pl = lo; pl < hi; ++pl) {
      const T* gp = gy + pl * g.oh * g.ow;
      detail::add_into_plane(dx + pl * g.h * g.w, g.h * g.w, accumulate, [&](C* d) {
        for (std::int64_t oy = 0; oy < g.oh; ++oy) {
          const std::int64_t i0 = adaptive_start(oy, g.h, g.oh), i1 = adaptive_end(oy, g.h, g.oh);
          for (std::int64_t ox = 0; ox < g.ow; ++ox) {
            const std::int64_t j0 = adaptive_start(ox, g.w, g.ow), j1 = adaptive_end(ox, g.w, g.ow);
            const C v = static_cast<C>(gp[oy * g.ow + ox]) / static_cast<C>((i1 - i0) * (j1 - j0));
            for (std::int64_t i = i0; i < i1; ++i)
              for (std::int64_t j = j0; j < j1; ++j) d[i * g.w + j] += v;
          }
        }
      });
    }
  });
}

}  // namespace tinynet::backend::cpu
