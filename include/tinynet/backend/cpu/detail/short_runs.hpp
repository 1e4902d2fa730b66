#pragma once
/// \file
/// Copy, add and zero short contiguous runs of floats (a convolution's rows are often 10-30
/// elements). Library calls (memmove, memset) and generic vector loops spend more on setup
/// and tails than on the data at these lengths; with AVX-512 a run is a few full-width
/// moves and one masked move for its tail.

#include <cstdint>
#include <type_traits>

#include "tinynet/core/config.hpp"

#if defined(TINYNET_CPU_AVX512)
#include <immintrin.h>
#endif

namespace tinynet::backend::cpu {

#if defined(TINYNET_CPU_AVX512)
namespace detail {
inline __mmask16 tail_mask(std::int64_t left) {
  return left >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << left) - 1u);
}
/// Lanes [lo, hi) clipped to [0, 16); none when the range is empty.
inline __mmask16 lanes_between(std::int64_t lo, std::int64_t hi) {
  lo = lo < 0 ? 0 : lo;
  hi = hi > 16 ? 16 : hi;
  if (hi <= lo) return 0;
  return static_cast<__mmask16>(((1u << hi) - 1u) & ~((1u << lo) - 1u));
}
}  // namespace detail
#endif

/// dst[0, n) = src[0, n)
template <typename T>
inline void copy_run(T* dst, const T* src, std::int64_t n) {
#if defined(TINYNET_CPU_AVX512)
  if constexpr (sizeof(T) == 4) {
    // Full-width moves first, a masked one only for the last few elements.
    std::int64_t x = 0;
    for (; x + 16 <= n; x += 16) _mm512_storeu_ps(dst + x, _mm512_loadu_ps(src + x));
    if (x + 8 <= n) {
      _mm256_storeu_ps(dst + x, _mm256_loadu_ps(src + x));
      x += 8;
    }
    if (x < n) {
      const __mmask16 m = detail::tail_mask(n - x);
      _mm512_mask_storeu_ps(dst + x, m, _mm512_maskz_loadu_ps(m, src + x));
    }
    return;
  }
#endif
  for (std::int64_t x = 0; x < n; ++x) dst[x] = src[x];
}

/// dst[0, n) += src[0, n)
template <typename T>
inline void add_run(T* dst, const T* src, std::int64_t n) {
#if defined(TINYNET_CPU_AVX512)
  if constexpr (sizeof(T) == 4) {
    for (std::int64_t x = 0; x < n; x += 16) {
      const __mmask16 m = detail::tail_mask(n - x);
      const __m512 sum = _mm512_add_ps(_mm512_maskz_loadu_ps(m, dst + x), _mm512_maskz_loadu_ps(m, src + x));
      _mm512_mask_storeu_ps(dst + x, m, sum);
    }
    return;
  }
#endif
  for (std::int64_t x = 0; x < n; ++x) dst[x] += src[x];
}

#if defined(TINYNET_CPU_AVX512)
namespace detail {
/// pack_rows for rows of 16 / K floats: K rows per 16-lane store, one masked load each.
template <int K>
inline void pack_rows_by(float* dst, const float* src, std::int64_t src_stride, std::int64_t rows) {
  constexpr int n = 16 / K;
  std::int64_t r = 0;
  for (; r + K <= rows; r += K) {
    __m512 v = _mm512_maskz_loadu_ps(lanes_between(0, n), src + r * src_stride);
#pragma GCC unroll 16
    for (int s = 1; s < K; ++s)
      v = _mm512_mask_loadu_ps(v, lanes_between(s * n, (s + 1) * n), src + (r + s) * src_stride - s * n);
    _mm512_storeu_ps(dst + r * n, v);
  }
  for (; r < rows; ++r) copy_run(dst + r * n, src + r * src_stride, n);
}
}  // namespace detail
#endif

/// dst[r*n + x] = src[r*src_stride + x] for r < rows, x < n: rows gathered into one
/// contiguous run (im2col's rows). Rows of 1, 2, 4 or 8 floats share 16-lane stores, one
/// masked load per row, instead of a short store each (AVX-512).
template <typename T>
inline void pack_rows(T* dst, const T* src, std::int64_t src_stride, std::int64_t rows, std::int64_t n) {
#if defined(TINYNET_CPU_AVX512)
  if constexpr (std::is_same_v<T, float>) {
    switch (n) {
      case 1:
        return detail::pack_rows_by<16>(dst, src, src_stride, rows);
      case 2:
        return detail::pack_rows_by<8>(dst, src, src_stride, rows);
      case 4:
        return detail::pack_rows_by<4>(dst, src, src_stride, rows);
      case 8:
        return detail::pack_rows_by<2>(dst, src, src_stride, rows);
      default:
        break;
    }
  }
#endif
  for (std::int64_t r = 0; r < rows; ++r) copy_run(dst + r * n, src + r * src_stride, n);
}

/// dst[0, n) = src[0, n) + value, or max(that, 0) with `relu` (NaN stays NaN).
template <typename T>
inline void copy_plus_run(T* dst, const T* src, T value, std::int64_t n, bool relu = false) {
#if defined(TINYNET_CPU_AVX512)
  if constexpr (sizeof(T) == 4) {
    const __m512 v = _mm512_set1_ps(value), zero = _mm512_setzero_ps();
    for (std::int64_t x = 0; x < n; x += 16) {
      const __mmask16 m = detail::tail_mask(n - x);
      __m512 r = _mm512_add_ps(_mm512_maskz_loadu_ps(m, src + x), v);
      // Zero where r <= 0, as relu's `x > 0 ? x : 0` does (NaN fails the test and stays).
      if (relu) r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(r, zero, _CMP_LE_OQ), zero);
      _mm512_mask_storeu_ps(dst + x, m, r);
    }
    return;
  }
#endif
  for (std::int64_t x = 0; x < n; ++x) {
    const T r = src[x] + value;
    dst[x] = relu && r <= T(0) ? T(0) : r;
  }
}

/// dst[0, n) = max(dst[0, n), 0) (NaN stays NaN).
template <typename T>
inline void relu_run(T* dst, std::int64_t n) {
  copy_plus_run(dst, dst, T(0), n, true);
}

/// dst[0, n) = y > 0 ? src : 0: the gradient through a ReLU whose output was y.
template <typename T>
inline void relu_grad_run(T* dst, const T* src, const T* y, std::int64_t n) {
#if defined(TINYNET_CPU_AVX512)
  if constexpr (sizeof(T) == 4) {
    const __m512 zero = _mm512_setzero_ps();
    for (std::int64_t x = 0; x < n; x += 16) {
      const __mmask16 m = detail::tail_mask(n - x);
      const __mmask16 pos = _mm512_mask_cmp_ps_mask(m, _mm512_maskz_loadu_ps(m, y + x), zero, _CMP_GT_OQ);
      _mm512_mask_storeu_ps(dst + x, m, _mm512_maskz_loadu_ps(pos, src + x));
    }
    return;
  }
#endif
  for (std::int64_t x = 0; x < n; ++x) dst[x] = y[x] > T(0) ? src[x] : T(0);
}

/// Sum of src[0, n), accumulated in 16 lanes (AVX-512) or in sequence: a fixed order either
/// way, so results do not depend on alignment or threads.
template <typename T>
inline T sum_run(const T* src, std::int64_t n) {
#if defined(TINYNET_CPU_AVX512)
  if constexpr (sizeof(T) == 4) {
    __m512 acc = _mm512_setzero_ps();
    for (std::int64_t x = 0; x < n; x += 16)
      acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(detail::tail_mask(n - x), src + x));
    return _mm512_reduce_add_ps(acc);
  }
#endif
  T acc = 0;
  for (std::int64_t x = 0; x < n; ++x) acc += src[x];
  return acc;
}

/// dst[0, n) = value
template <typename T>
inline void fill_run(T* dst, T value, std::int64_t n) {
#if defined(TINYNET_CPU_AVX512)
  if constexpr (sizeof(T) == 4) {
    const __m512 v = _mm512_set1_ps(value);
    for (std::int64_t x = 0; x < n; x += 16) _mm512_mask_storeu_ps(dst + x, detail::tail_mask(n - x), v);
    return;
  }
#endif
  for (std::int64_t x = 0; x < n; ++x) dst[x] = value;
}

}  // namespace tinynet::backend::cpu
