#pragma once
/// \file
/// Winograd F(2x2, 3x3) for stride-1 3x3 convolutions in float32 (AVX-512 builds): each
/// 4x4 input tile d becomes 16 values B^T d B, each filter g becomes G g G^T, and the
/// products become 16 independent GEMMs [out_c x in_c] x [in_c x tiles] - 16 multiply-adds
/// per 2x2 output tile and channel pair instead of im2col's 36. A^T m A turns each product
/// tile back into 2x2 outputs. conv2d uses it for the forward pass and for the input
/// gradient (a convolution of the output gradient with the flipped filters).
///
/// Layouts, for a group of images whose tiles are numbered p = (image * tiles_h + ty) *
/// tiles_w + tx: U[16][out_c][in_c], V[16][in_c][ld], M[16][out_c][ld], ld = padded_tiles(),
/// the planes of V and M v_plane() and m_plane() apart.
/// The transforms take 16 tiles of one tile row at a time; the GEMM kernel reads V in
/// place (no packing), broadcasting U.

#include "tinynet/core/config.hpp"

#include <algorithm>
#include <cstdint>

#include "tinynet/backend/cpu/parallel.hpp"

#if defined(TINYNET_CPU_AVX512)
#include <immintrin.h>
#endif

namespace tinynet::backend::cpu::winograd {

/// A stride-1 3x3 convolution of `count` images, as the transforms see it.
struct Shape {
  std::int64_t in_c, h, w;     // input planes
  std::int64_t out_c, oh, ow;  // output planes
  std::int64_t ph, pw;         // zero padding
  std::int64_t count;          // images side by side

  std::int64_t tiles_h() const { return (oh + 1) / 2; }
  std::int64_t tiles_w() const { return (ow + 1) / 2; }
  std::int64_t tiles() const { return count * tiles_h() * tiles_w(); }
  /// Row length of V and M: tiles rounded up to a whole vector.
  std::int64_t padded_tiles() const { return (tiles() + 15) / 16 * 16; }
  /// Distance between the 16 planes of V and of M: one cache line more than the data, so
  /// that the 16 values of a tile do not all fall into one L1 set (plane sizes are often
  /// multiples of 4 KiB: 64 channels x 176 tiles).
  std::int64_t v_plane() const { return in_c * padded_tiles() + 16; }
  std::int64_t m_plane() const { return out_c * padded_tiles() + 16; }
  std::int64_t u_size() const { return 16 * out_c * in_c; }
  std::int64_t v_size() const { return 16 * v_plane(); }
  std::int64_t m_size() const { return 16 * m_plane(); }
};

/// U[xi][o][i] = (G g G^T)[xi] for the filter g = w[o, i] ([out_c, in_c, 3, 3]); with
/// `for_input_gradient`, U[xi][i][o] for g = w[o, i] rotated by 180 degrees (the filters
/// that carry an output gradient back to the input).
inline void transform_weights(const float* w, std::int64_t out_c, std::int64_t in_c, bool for_input_gradient,
                              float* u) {
  for (std::int64_t o = 0; o < out_c; ++o)
    for (std::int64_t i = 0; i < in_c; ++i) {
      const float* src = w + (o * in_c + i) * 9;
      float g[3][3];
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) g[r][c] = for_input_gradient ? src[(2 - r) * 3 + (2 - c)] : src[r * 3 + c];
      float t[4][3];  // G g
      for (int c = 0; c < 3; ++c) {
        t[0][c] = g[0][c];
        t[1][c] = 0.5f * (g[0][c] + g[1][c] + g[2][c]);
        t[2][c] = 0.5f * (g[0][c] - g[1][c] + g[2][c]);
        t[3][c] = g[2][c];
      }
      const std::int64_t at = for_input_gradient ? i * out_c + o : o * in_c + i, plane = out_c * in_c;
      for (int r = 0; r < 4; ++r) {  // (G g) G^T
        u[(r * 4 + 0) * plane + at] = t[r][0];
        u[(r * 4 + 1) * plane + at] = 0.5f * (t[r][0] + t[r][1] + t[r][2]);
        u[(r * 4 + 2) * plane + at] = 0.5f * (t[r][0] - t[r][1] + t[r][2]);
        u[(r * 4 + 3) * plane + at] = t[r][2];
      }
    }
}

#if defined(TINYNET_CPU_AVX512)

namespace detail {

inline __mmask16 lanes_between(std::int64_t lo, std::int64_t hi) {
  lo = std::max<std::int64_t>(0, lo);
  hi = std::min<std::int64_t>(16, hi);
  if (hi <= lo) return 0;
  return static_cast<__mmask16>(((1u << hi) - 1u) & ~((1u << lo) - 1u));
}

/// row[start + l] for the lanes l with 0 <= start + l < w; zero elsewhere (not read).
inline __m512 load_inside(const float* row, std::int64_t start, std::int64_t w) {
  return _mm512_maskz_loadu_ps(lanes_between(-start, w - start), row + start);
}

}  // namespace detail

/// V[xi][c][p] = (B^T d B)[xi] for each tile d of `in` (image j's channel c at in + j *
/// image_stride + c * channel_stride, rows of s.w floats).
inline void transform_input(const Shape& s, const float* in, std::int64_t channel_stride, std::int64_t image_stride,
                            float* v) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  const std::int64_t th = s.tiles_h(), tw = s.tiles_w(), ld = s.padded_tiles(), plane = s.v_plane();
  // Plane by plane, top to bottom: the reads stream (the prefetchers follow them).
  for (std::int64_t j = 0; j < s.count; ++j)
    for (std::int64_t c = 0; c < s.in_c; ++c)
      for (std::int64_t ty = 0; ty < th; ++ty)
        for (std::int64_t tx0 = 0; tx0 < tw; tx0 += 16) {
          // d[r][k]: lane l holds input (2ty - ph + r, 2(tx0 + l) - pw + k).
          __m512 d[4][4];
          const std::int64_t x0 = 2 * tx0 - s.pw;
          for (int r = 0; r < 4; ++r) {
            const std::int64_t iy = 2 * ty - s.ph + r;
            if (iy < 0 || iy >= s.h) {
              for (int k = 0; k < 4; ++k) d[r][k] = _mm512_setzero_ps();
              continue;
            }
            const float* row = in + j * image_stride + c * channel_stride + iy * s.w;
            const __m512 a = detail::load_inside(row, x0, s.w), b = detail::load_inside(row, x0 + 16, s.w);
            const __m512 a2 = detail::load_inside(row, x0 + 2, s.w), b2 = detail::load_inside(row, x0 + 18, s.w);
            d[r][0] = _mm512_permutex2var_ps(a, even, b);
            d[r][1] = _mm512_permutex2var_ps(a, odd, b);
            d[r][2] = _mm512_permutex2var_ps(a2, even, b2);
            d[r][3] = _mm512_permutex2var_ps(a2, odd, b2);
          }
          __m512 e[4][4];  // d B, row by row
          for (int r = 0; r < 4; ++r) {
            e[r][0] = _mm512_sub_ps(d[r][0], d[r][2]);
            e[r][1] = _mm512_add_ps(d[r][1], d[r][2]);
            e[r][2] = _mm512_sub_ps(d[r][2], d[r][1]);
            e[r][3] = _mm512_sub_ps(d[r][1], d[r][3]);
          }
          const __mmask16 m = static_cast<__mmask16>((1u << std::min<std::int64_t>(16, tw - tx0)) - 1u);
          float* out = v + c * ld + (j * th + ty) * tw + tx0;
          for (int k = 0; k < 4; ++k) {  // B^T (d B)
            _mm512_mask_storeu_ps(out + (0 * 4 + k) * plane, m, _mm512_sub_ps(e[0][k], e[2][k]));
            _mm512_mask_storeu_ps(out + (1 * 4 + k) * plane, m, _mm512_add_ps(e[1][k], e[2][k]));
            _mm512_mask_storeu_ps(out + (2 * 4 + k) * plane, m, _mm512_sub_ps(e[2][k], e[1][k]));
            _mm512_mask_storeu_ps(out + (3 * 4 + k) * plane, m, _mm512_sub_ps(e[1][k], e[3][k]));
          }
        }
}

namespace detail {

/// M[rows k0..k0+KB)[p0..p0+48) = U[k][:] V[:][p] for one xi: KB x 3 vectors of
/// accumulators, V read in place, U broadcast. `left`: valid tiles from p0.
template <int KB>
inline void gemm_block(const float* u, const float* v, float* m, std::int64_t in_c, std::int64_t ld,
                       std::int64_t left) {
  const __mmask16 m0 = lanes_between(0, left), m1 = lanes_between(0, left - 16), m2 = lanes_between(0, left - 32);
  __m512 acc[KB][3];
#pragma GCC unroll 8
  for (int r = 0; r < KB; ++r) acc[r][0] = acc[r][1] = acc[r][2] = _mm512_setzero_ps();
  for (std::int64_t c = 0; c < in_c; ++c) {
    const float* row = v + c * ld;
    const __m512 v0 = _mm512_maskz_loadu_ps(m0, row), v1 = _mm512_maskz_loadu_ps(m1, row + 16),
                 v2 = _mm512_maskz_loadu_ps(m2, row + 32);
#pragma GCC unroll 8
    for (int r = 0; r < KB; ++r) {
      const __m512 b = _mm512_set1_ps(u[r * in_c + c]);
      acc[r][0] = _mm512_fmadd_ps(b, v0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(b, v1, acc[r][1]);
      acc[r][2] = _mm512_fmadd_ps(b, v2, acc[r][2]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < KB; ++r) {
    _mm512_mask_storeu_ps(m + r * ld, m0, acc[r][0]);
    _mm512_mask_storeu_ps(m + r * ld + 16, m1, acc[r][1]);
    _mm512_mask_storeu_ps(m + r * ld + 32, m2, acc[r][2]);
  }
}

}  // namespace detail

/// M[xi] = U[xi] V[xi] for the 16 xi; split over xi when `parallel`.
inline void multiply(const Shape& s, const float* u, const float* v, float* m, bool parallel) {
  const std::int64_t ld = s.padded_tiles(), tiles = s.tiles();
  auto one = [&](std::int64_t xi) {
    const float* uxi = u + xi * s.out_c * s.in_c;
    const float* vxi = v + xi * s.v_plane();
    float* mxi = m + xi * s.m_plane();
    // Tiles outermost: a 48-tile block of V stays in L1 while every output row uses it.
    for (std::int64_t p0 = 0; p0 < tiles; p0 += 48) {
      std::int64_t k = 0;
      for (; k + 8 <= s.out_c; k += 8)
        detail::gemm_block<8>(uxi + k * s.in_c, vxi + p0, mxi + k * ld + p0, s.in_c, ld, tiles - p0);
      const float* ut = uxi + k * s.in_c;
      float* mt = mxi + k * ld + p0;
      switch (s.out_c - k) {
        case 1: detail::gemm_block<1>(ut, vxi + p0, mt, s.in_c, ld, tiles - p0); break;
        case 2: detail::gemm_block<2>(ut, vxi + p0, mt, s.in_c, ld, tiles - p0); break;
        case 3: detail::gemm_block<3>(ut, vxi + p0, mt, s.in_c, ld, tiles - p0); break;
        case 4: detail::gemm_block<4>(ut, vxi + p0, mt, s.in_c, ld, tiles - p0); break;
        case 5: detail::gemm_block<5>(ut, vxi + p0, mt, s.in_c, ld, tiles - p0); break;
        case 6: detail::gemm_block<6>(ut, vxi + p0, mt, s.in_c, ld, tiles - p0); break;
        case 7: detail::gemm_block<7>(ut, vxi + p0, mt, s.in_c, ld, tiles - p0); break;
        default: break;
      }
    }
  };
  if (parallel) {
    parallel_for(16, 1, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t xi = lo; xi < hi; ++xi) one(xi);
    });
  } else {
    for (std::int64_t xi = 0; xi < 16; ++xi) one(xi);
  }
}

/// out[j, o, y, x] (+)= (A^T m A) for each tile (+ bias[o]; then max(., 0) with `relu`,
/// NaN kept, as relu does). `accumulate` adds to out instead of overwriting it. Image j's
/// plane o is at out + j * image_stride + o * channel_stride, rows of s.ow floats.
inline void transform_output(const Shape& s, const float* m, const float* bias, bool relu, bool accumulate, float* out,
                             std::int64_t channel_stride, std::int64_t image_stride) {
  const __m512i lo_idx = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i hi_idx = _mm512_add_epi32(lo_idx, _mm512_set1_epi32(8));
  const __m512 zero = _mm512_setzero_ps();
  const std::int64_t th = s.tiles_h(), tw = s.tiles_w(), ld = s.padded_tiles(), plane = s.m_plane();
  auto store = [&](float* dst, __mmask16 mask, __m512 value) {
    if (relu) value = _mm512_mask_mov_ps(value, _mm512_cmp_ps_mask(value, zero, _CMP_LE_OQ), zero);
    if (accumulate) value = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, dst), value);
    _mm512_mask_storeu_ps(dst, mask, value);
  };
  for (std::int64_t j = 0; j < s.count; ++j)
    for (std::int64_t o = 0; o < s.out_c; ++o) {
      const __m512 b = _mm512_set1_ps(bias != nullptr ? bias[o] : 0.0f);
      for (std::int64_t ty = 0; ty < th; ++ty)
        for (std::int64_t tx0 = 0; tx0 < tw; tx0 += 16) {
          const float* src = m + o * ld + (j * th + ty) * tw + tx0;
          const __mmask16 valid = static_cast<__mmask16>((1u << std::min<std::int64_t>(16, tw - tx0)) - 1u);
          __m512 t[4][4];
          for (int xi = 0; xi < 16; ++xi) t[xi / 4][xi % 4] = _mm512_maskz_loadu_ps(valid, src + xi * plane);
          __m512 s0[4], s1[4];  // A^T m
          for (int k = 0; k < 4; ++k) {
            s0[k] = _mm512_add_ps(_mm512_add_ps(t[0][k], t[1][k]), t[2][k]);
            s1[k] = _mm512_sub_ps(_mm512_sub_ps(t[1][k], t[2][k]), t[3][k]);
          }
          // (A^T m) A: the 2x2 outputs, bias included.
          const __m512 y00 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(s0[0], s0[1]), s0[2]), b);
          const __m512 y01 = _mm512_add_ps(_mm512_sub_ps(_mm512_sub_ps(s0[1], s0[2]), s0[3]), b);
          const __m512 y10 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(s1[0], s1[1]), s1[2]), b);
          const __m512 y11 = _mm512_add_ps(_mm512_sub_ps(_mm512_sub_ps(s1[1], s1[2]), s1[3]), b);
          const std::int64_t x0 = 2 * tx0, y0 = 2 * ty;
          const __mmask16 first = detail::lanes_between(0, s.ow - x0), second = detail::lanes_between(0, s.ow - x0 - 16);
          float* row = out + j * image_stride + o * channel_stride + y0 * s.ow + x0;
          store(row, first, _mm512_permutex2var_ps(y00, lo_idx, y01));
          if (second != 0) store(row + 16, second, _mm512_permutex2var_ps(y00, hi_idx, y01));
          if (y0 + 1 < s.oh) {
            store(row + s.ow, first, _mm512_permutex2var_ps(y10, lo_idx, y11));
            if (second != 0) store(row + s.ow + 16, second, _mm512_permutex2var_ps(y10, hi_idx, y11));
          }
        }
      }
}

#endif  // TINYNET_CPU_AVX512

}  // namespace tinynet::backend::cpu::winograd
