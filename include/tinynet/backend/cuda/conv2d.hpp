#pragma once
/// \file
/// conv2d device kernels (NCHW): im2col for a group of samples (dilation included), then
/// one strided-batched GEMM per group of samples and group of channels (cuBLAS on a GPU). Weight and bias gradients are
/// formed per sample and summed over samples in a fixed order, so results are deterministic. col2im is written as a
/// gather (each input element sums what read it): no atomics.

#include "tinynet/core/config.hpp"

#if defined(TINYNET_WITH_CUDA)

#include <algorithm>
#include <cstdint>

#include "tinynet/backend/backend.hpp"
#include "tinynet/backend/conv2d.hpp"
#include "tinynet/backend/cuda/detail/gemm.hpp"
#include "tinynet/backend/cuda/detail/launch.hpp"
#include "tinynet/backend/elementwise.hpp"

namespace tinynet::backend::cuda {

/// Samples per group: bounds the im2col buffer to about 64 M elements.
inline std::int64_t conv_group(const Conv2dGeometry& g) {
  return std::max<std::int64_t>(
      1, std::min<std::int64_t>(g.n, (std::int64_t{1} << 26) / std::max<std::int64_t>(1, g.col_size())));
}

/// Elements of device scratch conv2d_forward needs.
inline std::int64_t conv2d_forward_scratch(Tag, const Conv2dGeometry& g, Products) {
  return conv_group(g) * g.col_size();
}

/// Elements of device scratch conv2d_backward needs; with a fused ReLU, room for the
/// masked output gradient too.
inline std::int64_t conv2d_backward_scratch(Tag, const Conv2dGeometry& g, bool relu, Products) {
  const std::int64_t s = conv_group(g);
  return 2 * s * g.col_size() + g.n * g.out_c * g.weight_cols() + g.n * g.out_c +
         (relu ? g.n * g.out_c * g.col_cols() : 0);
}

namespace detail {

template <typename T>
struct Im2col {  // col[s, r, p] for samples [0, group) starting at x
  Conv2dGeometry g;
  const T* x;
  T* col;
  TINYNET_HOST_DEVICE void operator()(std::int64_t e) const {
    const std::int64_t P = g.oh * g.ow, K = g.c * g.kh * g.kw;
    const std::int64_t s = e / (K * P), r = (e / P) % K, p = e % P;
    const std::int64_t ci = r / (g.kh * g.kw), i = (r / g.kw) % g.kh, j = r % g.kw;
    const std::int64_t iy = (p / g.ow) * g.sh - g.ph + i * g.dil_h, ix = (p % g.ow) * g.sw - g.pw + j * g.dil_w;
    col[e] = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w ? x[((s * g.c + ci) * g.h + iy) * g.w + ix] : T(0);
  }
};

template <typename T>
struct Col2imGather {  // dx[s, ci, iy, ix] (+)= sum of the dcol entries that read it
  Conv2dGeometry g;
  const T* dcol;
  T* dx;
  bool accumulate;
  TINYNET_HOST_DEVICE void operator()(std::int64_t e) const {
    const std::int64_t P = g.oh * g.ow, K = g.c * g.kh * g.kw;
    const std::int64_t ix = e % g.w, iy = (e / g.w) % g.h, ci = (e / (g.w * g.h)) % g.c, s = e / (g.w * g.h * g.c);
    T acc = accumulate ? dx[e] : T(0);
    for (std::int64_t i = 0; i < g.kh; ++i) {
      const std::int64_t ty = iy + g.ph - i * g.dil_h;
      if (ty < 0 || ty % g.sh != 0 || ty / g.sh >= g.oh) continue;
      for (std::int64_t j = 0; j < g.kw; ++j) {
        const std::int64_t tx = ix + g.pw - j * g.dil_w;
        if (tx < 0 || tx % g.sw != 0 || tx / g.sw >= g.ow) continue;
        acc += dcol[s * K * P + ((ci * g.kh + i) * g.kw + j) * P + (ty / g.sh) * g.ow + tx / g.sw];
      }
    }
    dx[e] = acc;
  }
};

template <typename T>
struct FillChannels {  // y[s, o, p] = b[o]
  const T* b;
  T* y;
  std::int64_t channels, plane;
  TINYNET_HOST_DEVICE void operator()(std::int64_t e) const { y[e] = b[(e / plane) % channels]; }
};

template <typename T>
struct SumPlanes {  // out[q] = sum_p in[q * plane + p]
  const T* in;
  T* out;
  std::int64_t plane;
  TINYNET_HOST_DEVICE void operator()(std::int64_t q) const {
    T acc = 0;
    for (std::int64_t p = 0; p < plane; ++p) acc += in[q * plane + p];
    out[q] = acc;
  }
};

template <typename T>
struct SumSamples {  // dst[i] (+)= sum_s parts[s * len + i], in sample order
  const T* parts;
  T* dst;
  std::int64_t samples, len;
  bool accumulate;
  TINYNET_HOST_DEVICE void operator()(std::int64_t i) const {
    T acc = accumulate ? dst[i] : T(0);
    for (std::int64_t s = 0; s < samples; ++s) acc += parts[s * len + i];
    dst[i] = acc;
  }
};

}  // namespace detail

/// y[n] = W col(x[n]) + b, then max(y, 0) with `relu`; with groups, each group's output
/// channels from its weight rows and its rows of the columns.  `scratch` holds
/// conv2d_forward_scratch(g) elements.
template <typename T>
void conv2d_forward(Tag, const Conv2dGeometry& g, const T* x, const T* w, const T* b, T* y, T* scratch, bool relu,
                    Products products) {
  const std::int64_t P = g.oh * g.ow, K = g.col_rows(), in_size = g.c * g.h * g.w, out_size = g.out_c * P;
  const std::int64_t Kg = g.weight_cols(), Og = g.group_out();
  const std::int64_t group = conv_group(g);
  for (std::int64_t s0 = 0; s0 < g.n; s0 += group) {
    const std::int64_t ns = std::min(group, g.n - s0);
    for_each_index(ns * K * P, detail::Im2col<T>{g, x + s0 * in_size, scratch});
    if (b != nullptr) for_each_index(ns * out_size, detail::FillChannels<T>{b, y + s0 * out_size, g.out_c, P});
    for (std::int64_t gi = 0; gi < g.groups; ++gi)
      gemm_batched<T>(false, false, Og, P, Kg, T(1), w + gi * Og * Kg, Kg, 0, scratch + gi * Kg * P, P, K * P,
                      b != nullptr ? T(1) : T(0), y + s0 * out_size + gi * Og * P, P, out_size, ns, products);
  }
  if (relu) for_each_index(g.n * out_size, UnaryForward<Relu, T>{{}, y, y});
}

/// Gradients of conv2d; any of dx, dw, db may be null. `y_relu`: the output of a fused
/// conv2d_relu (the gradient passes where it is > 0), or null. `scratch` holds
/// conv2d_backward_scratch(g, y_relu != nullptr) elements.
template <typename T>
void conv2d_backward(Tag, const Conv2dGeometry& g, const T* x, const T* w, const T* gy, T* dx, bool acc_dx, T* dw,
                     bool acc_dw, T* db, bool acc_db, T* scratch, const T* y_relu, Products products) {
  const std::int64_t P = g.oh * g.ow, K = g.col_rows(), in_size = g.c * g.h * g.w, out_size = g.out_c * P;
  const std::int64_t Kg = g.weight_cols(), Og = g.group_out();
  const std::int64_t group = conv_group(g);
  T* col = scratch;
  T* dcol = col + group * g.col_size();
  T* dw_parts = dcol + group * g.col_size();
  T* db_parts = dw_parts + g.n * g.out_c * Kg;
  if (y_relu != nullptr) {
    T* masked = db_parts + g.n * g.out_c;
    for_each_index(g.n * out_size, UnaryBackward<Relu, T>{{}, nullptr, y_relu, gy, masked, false});
    gy = masked;
  }
  for (std::int64_t s0 = 0; s0 < g.n; s0 += group) {
    const std::int64_t ns = std::min(group, g.n - s0);
    const T* gys = gy + s0 * out_size;
    if (dw != nullptr) {
      for_each_index(ns * K * P, detail::Im2col<T>{g, x + s0 * in_size, col});
      for (std::int64_t gi = 0; gi < g.groups; ++gi)
        gemm_batched<T>(false, true, Og, Kg, P, T(1), gys + gi * Og * P, P, out_size, col + gi * Kg * P, P, K * P, T(0),
                        dw_parts + (s0 * g.out_c + gi * Og) * Kg, Kg, g.out_c * Kg, ns, products);
    }
    if (dx != nullptr) {
      for (std::int64_t gi = 0; gi < g.groups; ++gi)
        gemm_batched<T>(true, false, Kg, P, Og, T(1), w + gi * Og * Kg, Kg, 0, gys + gi * Og * P, P, out_size, T(0),
                        dcol + gi * Kg * P, P, K * P, ns, products);
      for_each_index(ns * in_size, detail::Col2imGather<T>{g, dcol, dx + s0 * in_size, acc_dx});
    }
  }
  if (dw != nullptr) for_each_index(g.out_c * Kg, detail::SumSamples<T>{dw_parts, dw, g.n, g.out_c * Kg, acc_dw});
  if (db != nullptr) {
    for_each_index(g.n * g.out_c, detail::SumPlanes<T>{gy, db_parts, P});
    for_each_index(g.out_c, detail::SumSamples<T>{db_parts, db, g.n, g.out_c, acc_db});
  }
}

}  // namespace tinynet::backend::cuda

#endif  // TINYNET_WITH_CUDA
