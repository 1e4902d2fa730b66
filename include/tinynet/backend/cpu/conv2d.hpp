#pragma once
/// \file
/// conv2d kernels (NCHW): im2col + GEMM per sample, samples split into a fixed number
/// of chunks run in parallel. Weight and bias gradients are summed per chunk and then
/// across chunks in a fixed order, so results do not depend on thread scheduling.

#include <algorithm>
#include <cstdint>

#include "tinynet/backend/cpu/gemm.hpp"

namespace tinynet::backend::cpu {

struct Conv2dGeometry {
  std::int64_t n, c, h, w;      // input
  std::int64_t out_c, kh, kw;   // weight [out_c, c, kh, kw]
  std::int64_t sh, sw, ph, pw;  // stride, padding
  std::int64_t oh, ow;          // output extents

  std::int64_t col_rows() const { return c * kh * kw; }
  std::int64_t col_cols() const { return oh * ow; }
  std::int64_t col_size() const { return col_rows() * col_cols(); }
};

/// col[(ci*kh + i)*kw + j, y*ow + x] = input[ci, y*sh - ph + i, x*sw - pw + j] (0 outside).
template <typename T>
void im2col(const Conv2dGeometry& g, const T* in, T* col) {
  for (std::int64_t ci = 0; ci < g.c; ++ci)
    for (std::int64_t i = 0; i < g.kh; ++i)
      for (std::int64_t j = 0; j < g.kw; ++j) {
        T* row = col + ((ci * g.kh + i) * g.kw + j) * g.oh * g.ow;
        const T* plane = in + ci * g.h * g.w;
        // Output columns x whose input column x*sw - pw + j lies inside [0, w): [x0, x1).
        const std::int64_t x0 = std::min(g.ow, std::max<std::int64_t>(0, (g.pw - j + g.sw - 1) / g.sw));
        const std::int64_t x1 = std::max(x0, std::min(g.ow, (g.w + g.pw - j + g.sw - 1) / g.sw));
        for (std::int64_t y = 0; y < g.oh; ++y) {
          const std::int64_t iy = y * g.sh - g.ph + i;
          T* out = row + y * g.ow;
          if (iy < 0 || iy >= g.h) {
            std::fill(out, out + g.ow, T(0));
            continue;
          }
          const T* src = plane + iy * g.w + x0 * g.sw - g.pw + j;
          std::fill(out, out + x0, T(0));
          if (g.sw == 1)
            std::copy(src, src + (x1 - x0), out + x0);
          else
            for (std::int64_t x = x0; x < x1; ++x) out[x] = src[(x - x0) * g.sw];
          std::fill(out + x1, out + g.ow, T(0));
        }
      }
}

/// The adjoint of im2col: in[ci, iy, ix] += col[...] for every column entry that read it.
template <typename T>
void col2im_add(const Conv2dGeometry& g, const T* col, T* in) {
  for (std::int64_t ci = 0; ci < g.c; ++ci)
    for (std::int64_t i = 0; i < g.kh; ++i)
      for (std::int64_t j = 0; j < g.kw; ++j) {
        const T* row = col + ((ci * g.kh + i) * g.kw + j) * g.oh * g.ow;
        T* plane = in + ci * g.h * g.w;
        const std::int64_t x0 = std::min(g.ow, std::max<std::int64_t>(0, (g.pw - j + g.sw - 1) / g.sw));
        const std::int64_t x1 = std::max(x0, std::min(g.ow, (g.w + g.pw - j + g.sw - 1) / g.sw));
        for (std::int64_t y = 0; y < g.oh; ++y) {
          const std::int64_t iy = y * g.sh - g.ph + i;
          if (iy < 0 || iy >= g.h) continue;
          const T* src = row + y * g.ow;
          T* dst = plane + iy * g.w + x0 * g.sw - g.pw + j;
          for (std::int64_t x = x0; x < x1; ++x) dst[(x - x0) * g.sw] += src[x];
        }
      }
}

/// How many chunks a batch is split into; callers size scratch buffers with it.
inline std::int64_t conv_chunks(std::int64_t batch) {
  return std::max<std::int64_t>(1, std::min<std::int64_t>(batch, get_num_threads()));
}

/// y[n] = W col(x[n]) + b.  `scratch` holds conv_chunks(n) * col_size() elements.
template <typename T>
void conv2d_forward(const Conv2dGeometry& g, const T* x, const T* w, const T* b, T* y, T* scratch) {
  const std::int64_t chunks = conv_chunks(g.n), out_hw = g.oh * g.ow;
  parallel_for(chunks, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t ch = lo; ch < hi; ++ch) {
      T* col = scratch + ch * g.col_size();
      for (std::int64_t s = ch * g.n / chunks; s < (ch + 1) * g.n / chunks; ++s) {
        T* ys = y + s * g.out_c * out_hw;
        im2col(g, x + s * g.c * g.h * g.w, col);
        if (b != nullptr)
          for (std::int64_t o = 0; o < g.out_c; ++o) std::fill(ys + o * out_hw, ys + (o + 1) * out_hw, b[o]);
        gemm<T>(false, false, g.out_c, out_hw, g.col_rows(), T(1), w, g.col_rows(), col, out_hw,
                b != nullptr ? T(1) : T(0), ys, out_hw, chunks == 1);
      }
    }
  });
}

/// Gradients of conv2d. Any of dx, dw, db may be null (not needed). `scratch` holds
/// conv_chunks(n) * (2 * col_size() + out_c * col_rows() + out_c) elements.
template <typename T>
void conv2d_backward(const Conv2dGeometry& g, const T* x, const T* w, const T* gy, T* dx, bool acc_dx, T* dw,
                     bool acc_dw, T* db, bool acc_db, T* scratch) {
  const std::int64_t chunks = conv_chunks(g.n), out_hw = g.oh * g.ow, kdim = g.col_rows();
  const std::int64_t wsize = g.out_c * kdim, per_chunk = 2 * g.col_size() + wsize + g.out_c;
  parallel_for(chunks, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t ch = lo; ch < hi; ++ch) {
      T* col = scratch + ch * per_chunk;
      T* dcol = col + g.col_size();
      T* dw_part = dcol + g.col_size();
      T* db_part = dw_part + wsize;
      std::fill(dw_part, dw_part + wsize + g.out_c, T(0));
      for (std::int64_t s = ch * g.n / chunks; s < (ch + 1) * g.n / chunks; ++s) {
        const T* gys = gy + s * g.out_c * out_hw;
        if (dw != nullptr) {
          im2col(g, x + s * g.c * g.h * g.w, col);
          gemm<T>(false, true, g.out_c, kdim, out_hw, T(1), gys, out_hw, col, out_hw, T(1), dw_part, kdim, false);
        }
        if (db != nullptr)
          for (std::int64_t o = 0; o < g.out_c; ++o) {
            T acc = 0;
            for (std::int64_t p = 0; p < out_hw; ++p) acc += gys[o * out_hw + p];
            db_part[o] += acc;
          }
        if (dx != nullptr) {
          T* dxs = dx + s * g.c * g.h * g.w;
          if (!acc_dx) std::fill(dxs, dxs + g.c * g.h * g.w, T(0));
          gemm<T>(true, false, kdim, out_hw, g.out_c, T(1), w, kdim, gys, out_hw, T(0), dcol, out_hw, chunks == 1);
          col2im_add(g, dcol, dxs);
        }
      }
    }
  });
  // Fixed-order sum over chunks: deterministic for a given thread count.
  auto reduce = [&](T* dst, bool acc, std::int64_t offset, std::int64_t len) {
    for (std::int64_t i = 0; i < len; ++i) {
      T total = acc ? dst[i] : T(0);
      for (std::int64_t ch = 0; ch < chunks; ++ch) total += scratch[ch * per_chunk + 2 * g.col_size() + offset + i];
      dst[i] = total;
    }
  };
  if (dw != nullptr) reduce(dw, acc_dw, 0, wsize);
  if (db != nullptr) reduce(db, acc_db, wsize, g.out_c);
}

}  // namespace tinynet::backend::cpu
