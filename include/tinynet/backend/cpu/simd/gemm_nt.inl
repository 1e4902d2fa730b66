/// \file
/// C += A B^T for row-major float32 matrices read in place along k: a convolution's weight
/// gradient, the output gradient times the input's columns, where both operands are long
/// rows and C is small (and linear's forward, x W^T). Each block of C (4 x 4 with AVX-512,
/// 4 x 2 with AVX2's sixteen registers) is vector dot products over k, summed across lanes
/// at the end (with AVX-512 in one tree of shuffles, 45 instructions for all 16); nothing
/// is packed, unlike a general GEMM, which copies both operands into panels first.

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2

namespace detail {

/// Columns of C (rows of B) per block.
constexpr int kGemmNtCols = TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512 ? 4 : 2;
/// Rows of B per panel, kept in L1 while every block of A's rows passes over it.
constexpr std::int64_t kGemmNtPanel = 8;

/// The chunk of k that gemm_nt multiplies at a time: k split into equal chunks of at most
/// 768 floats, each rounded up to a multiple of 16. Callers that stage their operands a
/// chunk at a time use the same chunks, so that the sums are added in the same order.
inline std::int64_t gemm_nt_chunk(std::int64_t k) {
  constexpr std::int64_t kMaxChunk = 768;
  const std::int64_t chunks = (k + kMaxChunk - 1) / kMaxChunk;
  return ((k + chunks - 1) / chunks + 15) / 16 * 16;
}

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512

// The shuffles below are the zero-masking forms with every lane kept: the same
// instructions, but GCC 12's plain forms start from an "undefined" register that
// -Wuninitialized reports in every file that includes this one.
constexpr __mmask16 kAll = 0xFFFF;

/// Lane-wise a + b of each pair's interleavings: [a0+a2, b0+b2, a1+a3, b1+b3] per 128 bits.
inline __m512 sum_pair_ps(__m512 a, __m512 b) {
  return _mm512_add_ps(_mm512_maskz_unpacklo_ps(kAll, a, b), _mm512_maskz_unpackhi_ps(kAll, a, b));
}
/// [A, B, C, D] per 128 bits from [A0, B0, A1, B1] and [C0, D0, C1, D1].
inline __m512 sum_quad_ps(__m512 ab, __m512 cd) {
  const __m512d x = _mm512_castps_pd(ab), y = _mm512_castps_pd(cd);
  return _mm512_add_ps(_mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xFF, x, y)),
                       _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xFF, x, y)));
}
/// Sums of 128-bit lanes (0+1, 2+3) of u and of v: [u01, u23, v01, v23].
inline __m512 sum_lanes_ps(__m512 u, __m512 v) {
  return _mm512_add_ps(_mm512_maskz_shuffle_f32x4(kAll, u, v, 0x88), _mm512_maskz_shuffle_f32x4(kAll, u, v, 0xDD));
}

#endif

/// C[o][r] += the sum of acc[o][r]'s lanes, for the MO x MR block at c.
template <int MO, int MR>
inline void add_block_sums(Vec (&acc)[4][kGemmNtCols], float* c, std::int64_t ldc) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
  // 128-bit lane o of `sums` = row o's four sums.
  __m512 rows[4];
#pragma GCC unroll 4
  for (int o = 0; o < 4; ++o)
    rows[o] = sum_quad_ps(sum_pair_ps(acc[o][0].v, acc[o][1].v), sum_pair_ps(acc[o][2].v, acc[o][3].v));
  const __m512 sums = sum_lanes_ps(sum_lanes_ps(rows[0], rows[1]), sum_lanes_ps(rows[2], rows[3]));
  // Through memory: extracting lane o takes a constant o, which an unoptimised build
  // (the loop not unrolled) does not have.
  alignas(64) float sum[16];
  _mm512_store_ps(sum, sums);
  const __mmask8 cols = static_cast<__mmask8>((1u << MR) - 1u);
#pragma GCC unroll 4
  for (int o = 0; o < MO; ++o) {
    float* row = c + o * ldc;
    _mm_mask_storeu_ps(row, cols, _mm_add_ps(_mm_maskz_loadu_ps(cols, row), _mm_load_ps(sum + 4 * o)));
  }
#else
#pragma GCC unroll 4
  for (int o = 0; o < MO; ++o)
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) c[o * ldc + r] += TINYNET_ISA_NAMESPACE::sum(acc[o][r]);
#endif
}

/// C[o][r] += sum over k of A[o][k] B[r][k] for an MO x MR block (MO <= 4, MR <= kGemmNtCols),
/// B's rows at b[0 .. MR-1].
template <int MO, int MR>
inline void gemm_nt_block(const float* a, std::int64_t lda, const float* const* b, float* c, std::int64_t ldc,
                          std::int64_t k) {
  constexpr int NC = kGemmNtCols;
  Vec acc[4][NC];
#pragma GCC unroll 4
  for (int o = 0; o < 4; ++o)
#pragma GCC unroll 4
    for (int r = 0; r < NC; ++r) acc[o][r] = Vec::zero();
  // Whole vectors with plain loads (AVX2's masked loads cost more), the tail masked.
  const auto step = [&](std::int64_t p, const Mask* m) {
    Vec bv[MR];
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) bv[r] = m == nullptr ? Vec::load(b[r] + p) : Vec::load(b[r] + p, *m);
#pragma GCC unroll 4
    for (int o = 0; o < MO; ++o) {
      const Vec av = m == nullptr ? Vec::load(a + o * lda + p) : Vec::load(a + o * lda + p, *m);
#pragma GCC unroll 4
      for (int r = 0; r < MR; ++r) acc[o][r] = fmadd(av, bv[r], acc[o][r]);
    }
  };
  std::int64_t p = 0;
#pragma GCC unroll 2
  for (; p + kLanes <= k; p += kLanes) step(p, nullptr);
  if (p < k) {
    const Mask tail = tail_mask(k - p);
    step(p, &tail);
  }
  add_block_sums<MO, MR>(acc, c, ldc);
}

/// The last `cols` (< MR) columns of a row block.
template <int MO, int MR>
inline void gemm_nt_rest(std::int64_t cols, const float* a, std::int64_t lda, const float* const* b, float* c,
                         std::int64_t ldc, std::int64_t k) {
  if constexpr (MR > 0) {
    if (cols == MR) return gemm_nt_block<MO, MR>(a, lda, b, c, ldc, k);
    gemm_nt_rest<MO, MR - 1>(cols, a, lda, b, c, ldc, k);
  }
}

/// Rows r0 .. r0+n-1 of C's row block; B's row r at b_row(r) + p.
template <int MO, typename Rows>
inline void gemm_nt_row_block(const float* a, std::int64_t lda, const Rows& b_row, std::int64_t r0, std::int64_t p,
                              float* c, std::int64_t ldc, std::int64_t n, std::int64_t k) {
  constexpr int NC = kGemmNtCols;
  const float* b[NC];
  std::int64_t r = 0;
  for (; r < n; r += NC) {
    const std::int64_t cols = std::min<std::int64_t>(NC, n - r);
    for (std::int64_t i = 0; i < cols; ++i) b[i] = b_row(r0 + r + i) + p;
    if (cols == NC)
      gemm_nt_block<MO, NC>(a, lda, b, c + r, ldc, k);
    else
      gemm_nt_rest<MO, NC - 1>(cols, a, lda, b, c + r, ldc, k);
  }
}

}  // namespace detail

/// C[m, n] += A[m, k] B[n, k]^T, A and C row-major with leading dimensions lda, ldc, and B's
/// row r starting at b_row(r) (any place: rows may overlap, as the shifted rows of a
/// convolution's input do). Serial: callers run it inside their own parallel chunks.
template <typename Rows>
void gemm_nt_rows(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, std::int64_t lda, const Rows& b_row,
                  float* c, std::int64_t ldc) {
  // A panel of 8 of B's rows stays in L1 while every block of 4 A rows passes over it
  // (at most 8 + 4 rows of 768 floats: 36 KB); each block of A is read from L2 once per
  // panel. k is split into equal chunks of at most 768 floats, each of which costs one sum
  // across lanes per block of C. Both sizes measured: docs/performance.md.
  constexpr std::int64_t nb = detail::kGemmNtPanel;
  if (m <= 0 || n <= 0 || k <= 0) return;
  const std::int64_t kc = detail::gemm_nt_chunk(k);
  for (std::int64_t p = 0; p < k; p += kc) {
    const std::int64_t kk = std::min(kc, k - p);
    for (std::int64_t r = 0; r < n; r += nb) {
      const std::int64_t nn = std::min(nb, n - r);
      std::int64_t o = 0;
      for (; o + 4 <= m; o += 4)
        detail::gemm_nt_row_block<4>(a + o * lda + p, lda, b_row, r, p, c + o * ldc + r, ldc, nn, kk);
      const float* ap = a + o * lda + p;
      float* cp = c + o * ldc + r;
      switch (m - o) {
        case 1:
          detail::gemm_nt_row_block<1>(ap, lda, b_row, r, p, cp, ldc, nn, kk);
          break;
        case 2:
          detail::gemm_nt_row_block<2>(ap, lda, b_row, r, p, cp, ldc, nn, kk);
          break;
        case 3:
          detail::gemm_nt_row_block<3>(ap, lda, b_row, r, p, cp, ldc, nn, kk);
          break;
        default:
          break;
      }
    }
  }
}

/// C[m, n] += A[m, k] B[n, k]^T, row-major with leading dimensions lda, ldb, ldc. Serial.
inline void gemm_nt(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, std::int64_t lda, const float* b,
                    std::int64_t ldb, float* c, std::int64_t ldc) {
  gemm_nt_rows(
      m, n, k, a, lda, [b, ldb](std::int64_t r) { return b + r * ldb; }, c, ldc);
}

#endif  // TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
