/// \file
/// C = A B for row-major float32 matrices whose A is small (a convolution's filters) and
/// whose B is read in place: each block of C (8 rows x 3 vectors with AVX-512, 4 x 3 with
/// AVX2's sixteen registers) is vector accumulators, B's rows loaded straight from memory
/// and A's elements broadcast. Nothing is packed and C is written, not accumulated into, so
/// it needs no zeroing first - the two passes Eigen's GEMM adds around its kernel.
/// Optionally a per-row bias and a ReLU are applied as C is stored.

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2

namespace detail {

/// Rows of C per block: its accumulators, three vectors a row, fill all but a few registers.
constexpr int kGemmRowsBlock = TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512 ? 8 : 4;
/// Columns of C per block.
constexpr std::int64_t kGemmRowsCols = 3 * kLanes;

/// C[r][p0 .. p0 + kGemmRowsCols) for KB rows: sum over j of A[r][j] B[j][p], then +
/// bias[r] and max(., 0) with relu (zero where <= 0, NaN kept). `left`: columns of C from p0.
/// `Full`: all kGemmRowsCols columns are there, and B's rows are read with plain loads
/// (AVX2's masked loads cost more than plain ones).
template <int KB, bool Full>
inline void gemm_rows_block(const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float* c,
                            std::int64_t ldc, std::int64_t k, std::int64_t left, const float* bias, bool relu) {
  const Mask m[3] = {lanes_between(0, left), lanes_between(0, left - kLanes), lanes_between(0, left - 2 * kLanes)};
  const auto load = [&](const float* p, int v) { return Full ? Vec::load(p) : Vec::load(p, m[v]); };
  Vec acc[KB][3];
#pragma GCC unroll 8
  for (int r = 0; r < KB; ++r) acc[r][0] = acc[r][1] = acc[r][2] = Vec::set1(bias != nullptr ? bias[r] : 0.0f);
  for (std::int64_t j = 0; j < k; ++j) {
    const float* row = b + j * ldb;
    const Vec v0 = load(row, 0), v1 = load(row + kLanes, 1), v2 = load(row + 2 * kLanes, 2);
#pragma GCC unroll 8
    for (int r = 0; r < KB; ++r) {
      const Vec s = Vec::set1(a[r * lda + j]);
      acc[r][0] = fmadd(s, v0, acc[r][0]);
      acc[r][1] = fmadd(s, v1, acc[r][1]);
      acc[r][2] = fmadd(s, v2, acc[r][2]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < KB; ++r)
    for (int v = 0; v < 3; ++v)
      (relu ? TINYNET_ISA_NAMESPACE::relu(acc[r][v]) : acc[r][v]).store(c + r * ldc + kLanes * v, m[v]);
}

/// The last `rows` (< KB) rows of a column block.
template <int KB>
inline void gemm_rows_rest(std::int64_t rows, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
                           float* c, std::int64_t ldc, std::int64_t k, std::int64_t left, const float* bias,
                           bool relu) {
  if constexpr (KB > 0) {
    if (rows == KB) {
      if (left >= kGemmRowsCols) return gemm_rows_block<KB, true>(a, lda, b, ldb, c, ldc, k, left, bias, relu);
      return gemm_rows_block<KB, false>(a, lda, b, ldb, c, ldc, k, left, bias, relu);
    }
    gemm_rows_rest<KB - 1>(rows, a, lda, b, ldb, c, ldc, k, left, bias, relu);
  }
}

/// Rows [r0, r1) of C in blocks of kGemmRowsBlock rows (then the remainder), columns in
/// blocks of kGemmRowsCols.
inline void gemm_rows_range(std::int64_t r0, std::int64_t r1, std::int64_t n, std::int64_t k, const float* a,
                            std::int64_t lda, const float* b, std::int64_t ldb, float* c, std::int64_t ldc,
                            const float* bias, bool relu) {
  // Columns outermost: a column block of B stays in cache while every row block uses it.
  for (std::int64_t p0 = 0; p0 < n; p0 += kGemmRowsCols) {
    std::int64_t r = r0;
    for (; r + kGemmRowsBlock <= r1; r += kGemmRowsBlock)
      gemm_rows_rest<kGemmRowsBlock>(kGemmRowsBlock, a + r * lda, lda, b + p0, ldb, c + r * ldc + p0, ldc, k, n - p0,
                                     bias != nullptr ? bias + r : nullptr, relu);
    gemm_rows_rest<kGemmRowsBlock - 1>(r1 - r, a + r * lda, lda, b + p0, ldb, c + r * ldc + p0, ldc, k, n - p0,
                                       bias != nullptr ? bias + r : nullptr, relu);
  }
}

}  // namespace detail

/// C[m, n] = A[m, k] B[k, n] (+ bias[row], then max(., 0) with `relu`), row-major with
/// leading dimensions lda, ldb, ldc; C is overwritten. `parallel`: rows split over the
/// threads in whole blocks.
inline void gemm_rows(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, std::int64_t lda, const float* b,
                      std::int64_t ldb, float* c, std::int64_t ldc, const float* bias = nullptr, bool relu = false,
                      bool parallel = false) {
  tinynet::detail::apply_fp_mode();
  constexpr std::int64_t rb = detail::kGemmRowsBlock;
  const std::int64_t blocks = (m + rb - 1) / rb;
  if (!parallel || blocks < 2 || get_num_threads() < 2) {
    detail::gemm_rows_range(0, m, n, k, a, lda, b, ldb, c, ldc, bias, relu);
    return;
  }
  const std::int64_t parts = std::min<std::int64_t>(blocks, get_num_threads());
  parallel_for(parts, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t p = lo; p < hi; ++p)
      detail::gemm_rows_range(std::min(m, p * blocks / parts * rb), std::min(m, (p + 1) * blocks / parts * rb), n, k, a,
                              lda, b, ldb, c, ldc, bias, relu);
  });
}

#endif  // TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
