#pragma once
/// \file
/// C = A B for row-major float32 matrices whose A is small (a convolution's filters) and
/// whose B is read in place (AVX-512 builds): each 8 x 48 block of C is 24 vector
/// accumulators, B's rows loaded straight from memory and A's elements broadcast. Nothing
/// is packed and C is written, not accumulated into, so it needs no zeroing first - the
/// two passes Eigen's GEMM adds around its kernel. Optionally a per-row bias and a ReLU are
/// applied as C is stored.

#include <algorithm>
#include <cstdint>

#include "tinynet/backend/cpu/detail/short_runs.hpp"
#include "tinynet/core/config.hpp"
#include "tinynet/core/parallel.hpp"

#if defined(TINYNET_CPU_AVX512)
#include <immintrin.h>

namespace tinynet::backend::cpu {

namespace detail {

/// C[r][p0 .. p0+48) for KB rows: sum over j of A[r][j] B[j][p], then + bias[r] and
/// max(., 0) with relu (zero where <= 0, NaN kept). `left`: columns of C from p0.
template <int KB>
inline void gemm_rows_block(const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float* c,
                            std::int64_t ldc, std::int64_t k, std::int64_t left, const float* bias, bool relu) {
  const __mmask16 m0 = lanes_between(0, left), m1 = lanes_between(0, left - 16), m2 = lanes_between(0, left - 32);
  __m512 acc[KB][3];
#pragma GCC unroll 8
  for (int r = 0; r < KB; ++r) acc[r][0] = acc[r][1] = acc[r][2] = _mm512_set1_ps(bias != nullptr ? bias[r] : 0.0f);
  for (std::int64_t j = 0; j < k; ++j) {
    const float* row = b + j * ldb;
    const __m512 v0 = _mm512_maskz_loadu_ps(m0, row), v1 = _mm512_maskz_loadu_ps(m1, row + 16),
                 v2 = _mm512_maskz_loadu_ps(m2, row + 32);
#pragma GCC unroll 8
    for (int r = 0; r < KB; ++r) {
      const __m512 s = _mm512_set1_ps(a[r * lda + j]);
      acc[r][0] = _mm512_fmadd_ps(s, v0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(s, v1, acc[r][1]);
      acc[r][2] = _mm512_fmadd_ps(s, v2, acc[r][2]);
    }
  }
  const __m512 zero = _mm512_setzero_ps();
#pragma GCC unroll 8
  for (int r = 0; r < KB; ++r)
    for (int v = 0; v < 3; ++v) {
      __m512 value = acc[r][v];
      if (relu) value = _mm512_mask_mov_ps(value, _mm512_cmp_ps_mask(value, zero, _CMP_LE_OQ), zero);
      _mm512_mask_storeu_ps(c + r * ldc + 16 * v, v == 0 ? m0 : v == 1 ? m1 : m2, value);
    }
}

/// Rows [r0, r1) of C, in blocks of 8 rows (then the remainder), columns in blocks of 48.
inline void gemm_rows_range(std::int64_t r0, std::int64_t r1, std::int64_t n, std::int64_t k, const float* a,
                            std::int64_t lda, const float* b, std::int64_t ldb, float* c, std::int64_t ldc,
                            const float* bias, bool relu) {
  // Columns outermost: a 48-column block of B stays in cache while every row block uses it.
  for (std::int64_t p0 = 0; p0 < n; p0 += 48) {
    std::int64_t r = r0;
    for (; r + 8 <= r1; r += 8)
      gemm_rows_block<8>(a + r * lda, lda, b + p0, ldb, c + r * ldc + p0, ldc, k, n - p0,
                         bias != nullptr ? bias + r : nullptr, relu);
    const float* at = a + r * lda;
    float* ct = c + r * ldc + p0;
    const float* bt = bias != nullptr ? bias + r : nullptr;
    switch (r1 - r) {
      case 1:
        gemm_rows_block<1>(at, lda, b + p0, ldb, ct, ldc, k, n - p0, bt, relu);
        break;
      case 2:
        gemm_rows_block<2>(at, lda, b + p0, ldb, ct, ldc, k, n - p0, bt, relu);
        break;
      case 3:
        gemm_rows_block<3>(at, lda, b + p0, ldb, ct, ldc, k, n - p0, bt, relu);
        break;
      case 4:
        gemm_rows_block<4>(at, lda, b + p0, ldb, ct, ldc, k, n - p0, bt, relu);
        break;
      case 5:
        gemm_rows_block<5>(at, lda, b + p0, ldb, ct, ldc, k, n - p0, bt, relu);
        break;
      case 6:
        gemm_rows_block<6>(at, lda, b + p0, ldb, ct, ldc, k, n - p0, bt, relu);
        break;
      case 7:
        gemm_rows_block<7>(at, lda, b + p0, ldb, ct, ldc, k, n - p0, bt, relu);
        break;
      default:
        break;
    }
  }
}

}  // namespace detail

/// C[m, n] = A[m, k] B[k, n] (+ bias[row], then max(., 0) with `relu`), row-major with
/// leading dimensions lda, ldb, ldc; C is overwritten. `parallel`: rows split over the
/// threads in blocks of 8.
inline void gemm_rows(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, std::int64_t lda, const float* b,
                      std::int64_t ldb, float* c, std::int64_t ldc, const float* bias = nullptr, bool relu = false,
                      bool parallel = false) {
  tinynet::detail::apply_fp_mode();
  const std::int64_t blocks = (m + 7) / 8;
  if (!parallel || blocks < 2 || get_num_threads() < 2) {
    detail::gemm_rows_range(0, m, n, k, a, lda, b, ldb, c, ldc, bias, relu);
    return;
  }
  const std::int64_t parts = std::min<std::int64_t>(blocks, get_num_threads());
  parallel_for(parts, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t p = lo; p < hi; ++p)
      detail::gemm_rows_range(std::min(m, p * blocks / parts * 8), std::min(m, (p + 1) * blocks / parts * 8), n, k, a,
                              lda, b, ldb, c, ldc, bias, relu);
  });
}

}  // namespace tinynet::backend::cpu

#endif  // TINYNET_CPU_AVX512
