/// \file
/// autocast's bfloat16 products at one vector level: both operands rounded to bfloat16
/// (nearest, ties to even), the products summed in float32. An operand is first prepared
/// (bf16_operands.inl), then multiplied (`gemm_rows`, `gemm_nt`: the float32 kernels'
/// shapes and meanings). Operands used once, as linear's are, can instead be rounded inside
/// the product a block at a time (`gemm_rows_rounding_b`, `gemm_nt_rounding`).
///
/// At the avx512_bf16 level (a CPU with AVX512-BF16: Level::native_bf16) the products run on
/// `vdpbf16ps`, which multiplies two pairs of bfloat16 per float32 lane and adds both to it:
/// twice the multiply-adds of a float32 FMA per instruction; at the amx level, products that
/// fill whole tiles run on them instead (simd/amx_products.inl). Everywhere else the float32
/// kernels multiply the operands' bfloat16 values held in float32: the same products, summed
/// in another order.

namespace bf16 {

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512_BF16

namespace detail {

/// C[r][p0 .. p0 + 16 NV) for KB rows of pairs: see gemm_rows_block (gemm_rows.inl), with k2
/// pairs of bfloat16 along k; NV vectors a row (two for a panel's last 32 columns or fewer,
/// so that no third vector multiplies only padding). With `add` C is added to, not
/// overwritten (no bias or ReLU then).
template <int KB, int NV, bool Full>
inline void gemm_rows_block(const std::uint32_t* a, std::int64_t lda, const std::uint32_t* b, std::int64_t ldb,
                            float* c, std::int64_t ldc, std::int64_t k2, std::int64_t left, const float* bias,
                            bool relu, bool add) {
  const __mmask16 m[3] = {lanes_between(0, left), lanes_between(0, left - 16), lanes_between(0, left - 32)};
  __m512 acc[KB][NV];
#pragma GCC unroll 8
  for (int r = 0; r < KB; ++r)
#pragma GCC unroll 3
    for (int q = 0; q < NV; ++q)
      acc[r][q] =
          add ? _mm512_maskz_loadu_ps(m[q], c + r * ldc + 16 * q) : _mm512_set1_ps(bias != nullptr ? bias[r] : 0.0f);
  for (std::int64_t j = 0; j < k2; ++j) {
    const std::uint32_t* row = b + j * ldb;
    __m512bh v[NV];
#pragma GCC unroll 3
    for (int q = 0; q < NV; ++q)
      v[q] = reinterpret_cast<__m512bh>(Full ? _mm512_loadu_si512(row + 16 * q)
                                             : _mm512_maskz_loadu_epi32(m[q], row + 16 * q));
#pragma GCC unroll 8
    for (int r = 0; r < KB; ++r) {
      const __m512bh s = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(a[r * lda + j])));
#pragma GCC unroll 3
      for (int q = 0; q < NV; ++q) acc[r][q] = _mm512_dpbf16_ps(acc[r][q], s, v[q]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < KB; ++r)
#pragma GCC unroll 3
    for (int q = 0; q < NV; ++q) {
      const Vec out{acc[r][q]};
      (relu ? TINYNET_ISA_NAMESPACE::relu(out) : out).store(c + r * ldc + 16 * q, m[q]);
    }
}

template <int KB>
inline void gemm_rows_rest(std::int64_t rows, const std::uint32_t* a, std::int64_t lda, const std::uint32_t* b,
                           std::int64_t ldb, float* c, std::int64_t ldc, std::int64_t k2, std::int64_t left,
                           const float* bias, bool relu, bool add = false) {
  if constexpr (KB > 0) {
    if (rows == KB) {
      if (left >= 48) return gemm_rows_block<KB, 3, true>(a, lda, b, ldb, c, ldc, k2, left, bias, relu, add);
      if (left > 32) return gemm_rows_block<KB, 3, false>(a, lda, b, ldb, c, ldc, k2, left, bias, relu, add);
      if (left == 32) return gemm_rows_block<KB, 2, true>(a, lda, b, ldb, c, ldc, k2, left, bias, relu, add);
      return gemm_rows_block<KB, 2, false>(a, lda, b, ldb, c, ldc, k2, left, bias, relu, add);
    }
    gemm_rows_rest<KB - 1>(rows, a, lda, b, ldb, c, ldc, k2, left, bias, relu, add);
  }
}

/// Rows [r0, r1) of C = A B (C += A B with `add`), A's rows and B's rows in pairs (k2 of them).
inline void gemm_rows_range(std::int64_t r0, std::int64_t r1, std::int64_t n, std::int64_t k2, const std::uint32_t* a,
                            std::int64_t lda, const std::uint32_t* b, std::int64_t ldb, float* c, std::int64_t ldc,
                            const float* bias, bool relu, bool add = false) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AMX
  if (tile::pays(r1 - r0, n, k2))
    return tile::gemm_rows_range<tile::Hardware>(r0, r1, n, k2, a, lda, b, ldb, c, ldc, bias, relu, add);
#endif
  constexpr int rb = 8;
  for (std::int64_t p0 = 0; p0 < n; p0 += 48) {
    std::int64_t r = r0;
    for (; r + rb <= r1; r += rb)
      gemm_rows_rest<rb>(rb, a + r * lda, lda, b + p0, ldb, c + r * ldc + p0, ldc, k2, n - p0,
                         bias != nullptr ? bias + r : nullptr, relu, add);
    gemm_rows_rest<rb - 1>(r1 - r, a + r * lda, lda, b + p0, ldb, c + r * ldc + p0, ldc, k2, n - p0,
                           bias != nullptr ? bias + r : nullptr, relu, add);
  }
}

/// Columns [c0, c1) of C = A B (no bias) from B's rows (floats, or bfloat16), paired 48
/// columns at a time into `panel` (k2 rows of 48 pairs, in cache), each panel then
/// multiplied by every block of A's rows.
template <typename B>
inline void gemm_rows_panels(std::int64_t m, std::int64_t c0, std::int64_t c1, std::int64_t k, const std::uint32_t* a,
                             std::int64_t lda, const B* b, std::int64_t ldb, float* c, std::int64_t ldc,
                             std::uint32_t* panel) {
  constexpr std::int64_t width = 48;
  for (std::int64_t p0 = c0; p0 < c1; p0 += width) {
    const std::int64_t left = std::min(width, c1 - p0);
    pairs(k, left, b + p0, ldb, panel, width, p0 + width < c1 ? width : 0);  // the next panel's columns fetched
    gemm_rows_range(0, m, left, (k + 1) / 2, a, lda, panel, width, c + p0, ldc, nullptr, false);
  }
}

/// C[o][r] += sum over k of A[o][k] B[r][k] for an MO x MR block: see gemm_nt_block
/// (gemm_nt.inl); k, a multiple of 2, counts bfloat16.
template <int MO, int MR>
inline void gemm_nt_block(const std::uint16_t* a, std::int64_t lda, const std::uint16_t* b, std::int64_t ldb, float* c,
                          std::int64_t ldc, std::int64_t k) {
  Vec acc[4][4];
#pragma GCC unroll 4
  for (int o = 0; o < 4; ++o)
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) acc[o][r] = Vec::zero();
  for (std::int64_t p = 0; p < k; p += 32) {
    const __mmask32 m = k - p >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((1u << (k - p)) - 1u);
    __m512bh bv[MR];
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) bv[r] = reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi16(m, b + r * ldb + p));
#pragma GCC unroll 4
    for (int o = 0; o < MO; ++o) {
      const __m512bh av = reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi16(m, a + o * lda + p));
#pragma GCC unroll 4
      for (int r = 0; r < MR; ++r) acc[o][r].v = _mm512_dpbf16_ps(acc[o][r].v, av, bv[r]);
    }
  }
  TINYNET_ISA_NAMESPACE::detail::add_block_sums<MO, MR>(acc, c, ldc);
}

template <int MO, int MR>
inline void gemm_nt_rest(std::int64_t cols, const std::uint16_t* a, std::int64_t lda, const std::uint16_t* b,
                         std::int64_t ldb, float* c, std::int64_t ldc, std::int64_t k) {
  if constexpr (MR > 0) {
    if (cols == MR) return gemm_nt_block<MO, MR>(a, lda, b, ldb, c, ldc, k);
    gemm_nt_rest<MO, MR - 1>(cols, a, lda, b, ldb, c, ldc, k);
  }
}

template <int MO>
inline void gemm_nt_row_block(const std::uint16_t* a, std::int64_t lda, const std::uint16_t* b, std::int64_t ldb,
                              float* c, std::int64_t ldc, std::int64_t n, std::int64_t k) {
  std::int64_t r = 0;
  for (; r + 4 <= n; r += 4) gemm_nt_block<MO, 4>(a, lda, b + r * ldb, ldb, c + r, ldc, k);
  gemm_nt_rest<MO, 3>(n - r, a, lda, b + r * ldb, ldb, c + r, ldc, k);
}

/// The length of gemm_nt's chunks of k (even): as many bytes per chunk as the float32
/// gemm_nt's, in chunks of equal length, multiples of 32.
inline std::int64_t nt_chunk(std::int64_t k) {
  constexpr std::int64_t kMaxChunk = 1536;
  const std::int64_t chunks = (k + kMaxChunk - 1) / kMaxChunk;
  return ((k + chunks - 1) / chunks + 31) / 32 * 32;
}

/// C += A B^T over bfloat16 rows (k even); blocked as the float32 gemm_nt, over as many
/// bytes per chunk of k.
inline void gemm_nt(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint16_t* a, std::int64_t lda,
                    const std::uint16_t* b, std::int64_t ldb, float* c, std::int64_t ldc) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AMX
  if (tile::pays(m, n, k / 2)) return tile::gemm_nt<tile::Hardware>(m, n, k, a, lda, b, ldb, c, ldc);
#endif
  constexpr std::int64_t nb = 8;
  const std::int64_t kc = nt_chunk(k);
  for (std::int64_t p = 0; p < k; p += kc) {
    const std::int64_t kk = std::min(kc, k - p);
    for (std::int64_t r = 0; r < n; r += nb) {
      const std::int64_t nn = std::min(nb, n - r);
      const std::uint16_t* bp = b + r * ldb + p;
      std::int64_t o = 0;
      for (; o + 4 <= m; o += 4) gemm_nt_row_block<4>(a + o * lda + p, lda, bp, ldb, c + o * ldc + r, ldc, nn, kk);
      const std::uint16_t* ap = a + o * lda + p;
      float* cp = c + o * ldc + r;
      if (m - o == 1) gemm_nt_row_block<1>(ap, lda, bp, ldb, cp, ldc, nn, kk);
      if (m - o == 2) gemm_nt_row_block<2>(ap, lda, bp, ldb, cp, ldc, nn, kk);
      if (m - o == 3) gemm_nt_row_block<3>(ap, lda, bp, ldb, cp, ldc, nn, kk);
    }
  }
}

}  // namespace detail

#endif  // TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512_BF16

/// C[m, n] = A[m, k] B[k, n] (+ bias[row], then max(., 0) with `relu`) from prepared
/// operands (a: rows, b: pairs); C is overwritten. `parallel`: rows split over the threads.
inline void gemm_rows(std::int64_t m, std::int64_t n, std::int64_t k, Operand a, Operand b, float* c, std::int64_t ldc,
                      const float* bias = nullptr, bool relu = false, bool parallel = false) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512_BF16
  {
    const auto* ap = static_cast<const std::uint32_t*>(a.data);
    const auto* bp = static_cast<const std::uint32_t*>(b.data);
    const std::int64_t k2 = (k + 1) / 2, lda = a.ld / 2, blocks = (m + 7) / 8;
    const std::int64_t parts = parallel ? std::min<std::int64_t>(blocks, get_num_threads()) : 1;
    parallel_for(parts, 1, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t p = lo; p < hi; ++p)
        detail::gemm_rows_range(std::min(m, p * blocks / parts * 8), std::min(m, (p + 1) * blocks / parts * 8), n, k2,
                                ap, lda, bp, b.ld, c, ldc, bias, relu);
    });
    return;
  }
#endif
  const auto* ap = static_cast<const float*>(a.data);
  const auto* bp = static_cast<const float*>(b.data);
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
  TINYNET_ISA_NAMESPACE::gemm_rows(m, n, k, ap, a.ld, bp, b.ld, c, ldc, bias, relu, parallel);
#else
  gemm<float>(false, false, m, n, k, 1.0f, ap, a.ld, bp, b.ld, 0.0f, c, ldc, parallel);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      const float v = c[i * ldc + j] + (bias != nullptr ? bias[i] : 0.0f);
      c[i * ldc + j] = relu && !(v > 0.0f) && v == v ? 0.0f : v;
    }
#endif
}

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2 && TINYNET_ISA_LEVEL < TINYNET_ISA_AVX512_BF16
namespace detail {

// Without vdpbf16ps, operands used once (linear's) are rounded a block at a time into cache
// for the float32 kernels, as the native kernels pair them: a pass over a large operand
// into memory first would cost more than its product.

/// Columns of B per rounded panel: whole column blocks of the float32 gemm_rows (two at
/// AVX-512, four at AVX2).
constexpr std::int64_t kRoundedPanel = 96;
static_assert(kRoundedPanel % TINYNET_ISA_NAMESPACE::detail::kGemmRowsCols == 0);

/// r rows of k elements (lds apart) as bfloat16 values in float into dst (ldd apart):
/// floats rounded, bfloat16 (autocast's activations) widened. Serially: each thread
/// prepares its own block.
template <typename S>
void round_rows(std::int64_t r, std::int64_t k, const S* src, std::int64_t lds, float* dst, std::int64_t ldd) {
  for (std::int64_t i = 0; i < r; ++i) {
    if constexpr (std::is_same_v<S, bfloat16>)
      copy_run(dst + i * ldd, src + i * lds, k);
    else
      tinynet::detail::round_to_bf16(src + i * lds, k, dst + i * ldd);
  }
}

/// Columns [c0, c1) of C = A B (no bias) from B's rows rounded (or widened) kRoundedPanel
/// columns at a time into `panel` (k rows), each panel then multiplied by every block of
/// A's rows.
template <typename B>
void gemm_rows_rounded_panels(std::int64_t m, std::int64_t c0, std::int64_t c1, std::int64_t k, const float* a,
                              std::int64_t lda, const B* b, std::int64_t ldb, float* c, std::int64_t ldc,
                              float* panel) {
  for (std::int64_t p0 = c0; p0 < c1; p0 += kRoundedPanel) {
    const std::int64_t width = std::min(kRoundedPanel, c1 - p0);
    round_rows(k, width, b + p0, ldb, panel, kRoundedPanel);
    TINYNET_ISA_NAMESPACE::detail::gemm_rows_range(0, m, width, k, a, lda, panel, kRoundedPanel, c + p0, ldc, nullptr,
                                                   false);
  }
}

}  // namespace detail
#endif

/// How gemm_rows_rounding_b and gemm_nt_rounding split their work over the threads: over
/// `extent` in blocks of `step` (the split they prefer) when it has enough blocks for the
/// threads, or no fewer than the other extent has, else over `other` in blocks of
/// `other_step`.
struct ProductSplit {
  ProductSplit(bool parallel, std::int64_t extent, std::int64_t step, std::int64_t other, std::int64_t other_step) {
    const std::int64_t threads = parallel ? get_num_threads() : 1;
    const std::int64_t blocks_of = (extent + step - 1) / step, other_blocks = (other + other_step - 1) / other_step;
    preferred = blocks_of >= 2 * threads || blocks_of >= other_blocks;
    blocks = preferred ? blocks_of : other_blocks;
    parts = std::min(blocks, threads);
    this->step = preferred ? step : other_step;
    this->extent = preferred ? extent : other;
  }
  /// Part p's range [from, to) of the extent split.
  std::pair<std::int64_t, std::int64_t> range(std::int64_t p) const {
    return {p * blocks / parts * step, std::min(extent, (p + 1) * blocks / parts * step)};
  }
  /// The longest part's length.
  std::int64_t longest() const { return std::min(extent, (blocks + parts - 1) / parts * step); }

  bool preferred;
  std::int64_t blocks, parts, step, extent;
};

/// C[m, n] = A[m, k] B[k, n] as gemm_rows (no bias), B given as k rows of n floats: rounded
/// to pairs 48 columns at a time, in cache, as the product reaches them, instead of a pass
/// over all of B into memory first (for a large B, such as linear's weights, that pass
/// costs more than the product saves). `parallel`: B's columns split over the threads, or,
/// when B has too few of them, A's rows in blocks of 8 (each thread then rounds all of B).
/// B may also be bfloat16 (autocast's activations), paired as it is with vdpbf16ps. At the
/// AVX2 and AVX-512 levels the float32 kernel multiplies B's panels rounded the same way, to
/// bfloat16 values in float (a bfloat16 B widened); the baseline takes float B only.
template <typename B>
void gemm_rows_rounding_b(std::int64_t m, std::int64_t n, std::int64_t k, Operand a, const B* b, std::int64_t ldb,
                          float* c, std::int64_t ldc, bool parallel) {
  // Each thread's parts: `panels(i0, i1, c0, c1, scratch)` makes C's rows [i0, i1) by
  // columns [c0, c1), preparing B's panels in the thread's own scratch.
  [[maybe_unused]] const auto over_parts = [&](const ProductSplit& split, std::int64_t scratch_floats, auto panels) {
    parallel_for(split.parts, 1, [&](std::int64_t lo, std::int64_t hi) {
      ScratchFloats scratch(scratch_floats);
      for (std::int64_t p = lo; p < hi; ++p) {
        const auto [from, to] = split.range(p);
        if (split.preferred)
          panels(0, m, from, to, scratch.data());
        else
          panels(from, to, 0, n, scratch.data());
      }
    });
  };
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512_BF16
  {
    const auto* ap = static_cast<const std::uint32_t*>(a.data);
    const std::int64_t lda = a.ld / 2;
    // B's panels, else A's row blocks.
    over_parts(ProductSplit(parallel, n, 48, m, 8), (k + 1) / 2 * 48,
               [&](std::int64_t i0, std::int64_t i1, std::int64_t c0, std::int64_t c1, float* scratch) {
                 detail::gemm_rows_panels(i1 - i0, c0, c1, k, ap + i0 * lda, lda, b, ldb, c + i0 * ldc, ldc,
                                          reinterpret_cast<std::uint32_t*>(scratch));
               });
    return;
  }
#endif
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2 && TINYNET_ISA_LEVEL < TINYNET_ISA_AVX512_BF16
  // The float32 kernel over B's panels rounded (or widened) in cache, split as above.
  const auto* ap = static_cast<const float*>(a.data);
  over_parts(ProductSplit(parallel, n, detail::kRoundedPanel, m, TINYNET_ISA_NAMESPACE::detail::kGemmRowsBlock),
             k * detail::kRoundedPanel,
             [&](std::int64_t i0, std::int64_t i1, std::int64_t c0, std::int64_t c1, float* scratch) {
               detail::gemm_rows_rounded_panels(i1 - i0, c0, c1, k, ap + i0 * a.ld, a.ld, b, ldb, c + i0 * ldc, ldc,
                                                scratch);
             });
#else
  if constexpr (std::is_same_v<B, float>) {
    ScratchFloats bs(bf16_operand_floats(k, n));
    gemm_rows(m, n, k, a, pairs(k, n, b, ldb, bs.data()), c, ldc, nullptr, false, parallel);
  } else {
    throw Error("bfloat16 operands need the avx2 level or above");
  }
#endif
}

/// C[m, n] += A[m, k] B[n, k]^T from operands prepared with rows(). Serial.
inline void gemm_nt(std::int64_t m, std::int64_t n, std::int64_t k, Operand a, Operand b, float* c, std::int64_t ldc) {
  if (m <= 0 || n <= 0 || k <= 0) return;
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512_BF16
  return detail::gemm_nt(m, n, (k + 1) / 2 * 2, static_cast<const std::uint16_t*>(a.data), a.ld,
                         static_cast<const std::uint16_t*>(b.data), b.ld, c, ldc);
#endif
  const auto* ap = static_cast<const float*>(a.data);
  const auto* bp = static_cast<const float*>(b.data);
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
  TINYNET_ISA_NAMESPACE::gemm_nt(m, n, k, ap, a.ld, bp, b.ld, c, ldc);
#else
  gemm<float>(false, true, m, n, k, 1.0f, ap, a.ld, bp, b.ld, 1.0f, c, ldc);
#endif
}

/// C[m, n] += A[m, k] B[n, k]^T as gemm_nt, both operands given as float rows and rounded
/// in cache a block at a time (A's rows for each chunk of k, then 8 of B's rows) instead
/// of passes over both into memory first. `parallel`: B's rows split over the threads in
/// blocks of 8, each thread rounding A's chunks for itself (linear's input, against its
/// weights), or, when B has too few blocks, A's rows in blocks of 4. A may also be rows of
/// bfloat16 (autocast's activations): read as they are with vdpbf16ps (k even), widened
/// block by block at the AVX2 and AVX-512 levels, where the float32 kernel multiplies the
/// blocks rounded the same way, to bfloat16 values in float, over chunks of k of up to 768.
template <typename A>
void gemm_nt_rounding(std::int64_t m, std::int64_t n, std::int64_t k, const A* a, std::int64_t lda, const float* b,
                      std::int64_t ldb, float* c, std::int64_t ldc, bool parallel) {
  if (m <= 0 || n <= 0 || k <= 0) return;
  const ProductSplit split(parallel, n, 8, m, 4);  // B's blocks of 8 rows, else A's of 4
  // Part p's rows of A, [i0, i1), times its rows of B, [j0, j1).
  const auto part = [&](std::int64_t p) {
    const auto [from, to] = split.range(p);
    return split.preferred ? std::array<std::int64_t, 4>{0, m, from, to} : std::array<std::int64_t, 4>{from, to, 0, n};
  };
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512_BF16
  {
    const std::int64_t kc = detail::nt_chunk((k + 1) / 2 * 2);
    parallel_for(split.parts, 1, [&](std::int64_t lo, std::int64_t hi) {
      constexpr bool round_a = std::is_same_v<A, float>;
      ScratchFloats as(round_a ? (split.preferred ? m : split.longest()) * kc / 2 : 0), bs(8 * kc / 2);
      auto* b16 = reinterpret_cast<std::uint16_t*>(bs.data());
      for (std::int64_t p = lo; p < hi; ++p) {
        const auto [i0, i1, j0, j1] = part(p);
        for (std::int64_t p0 = 0; p0 < k; p0 += kc) {
          const std::int64_t kk = std::min(kc, k - p0), ld = (kk + 1) / 2 * 2;
          const std::uint16_t* a16 = nullptr;
          std::int64_t a_ld = lda;
          if constexpr (round_a) {
            auto* rounded = reinterpret_cast<std::uint16_t*>(as.data());
            detail::rows(i1 - i0, kk, a + i0 * lda + p0, lda, rounded, ld);
            a16 = rounded;
            a_ld = ld;
          } else {
            a16 = reinterpret_cast<const std::uint16_t*>(a + i0 * lda + p0);
          }
          for (std::int64_t r = j0; r < j1; r += 8) {
            const std::int64_t nn = std::min<std::int64_t>(8, j1 - r);
            // The next rows of B (of this chunk, else the next chunk's first) are fetched
            // while these are multiplied: B (the weights) is read once and from memory.
            const bool same_chunk = r + 8 < j1;
            const std::int64_t next_p0 = same_chunk ? p0 : p0 + kc, next_r = same_chunk ? r + 8 : j0;
            const std::int64_t next_rows = next_p0 < k ? std::min<std::int64_t>(8, j1 - next_r) : 0;
            detail::rows(nn, kk, b + r * ldb + p0, ldb, b16, ld, b + next_r * ldb + next_p0, next_rows);
            detail::gemm_nt(i1 - i0, nn, ld, a16, a_ld, b16, ld, c + i0 * ldc + r, ldc);
          }
        }
      }
    });
    return;
  }
#endif
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2 && TINYNET_ISA_LEVEL < TINYNET_ISA_AVX512_BF16
  // The float32 kernel over chunks of A's rows and of B's rows at a time rounded (A's, or
  // widened) in cache, split as above: gemm_nt's own chunks of k and panels of B, so that
  // its sums come in the same order as from operands rounded whole.
  const std::int64_t kc = TINYNET_ISA_NAMESPACE::detail::gemm_nt_chunk(k);
  constexpr std::int64_t nb = TINYNET_ISA_NAMESPACE::detail::kGemmNtPanel;
  parallel_for(split.parts, 1, [&](std::int64_t lo, std::int64_t hi) {
    ScratchFloats as((split.preferred ? m : split.longest()) * kc), bs(nb * kc);
    for (std::int64_t p = lo; p < hi; ++p) {
      const auto [i0, i1, j0, j1] = part(p);
      for (std::int64_t p0 = 0; p0 < k; p0 += kc) {
        const std::int64_t kk = std::min(kc, k - p0);
        detail::round_rows(i1 - i0, kk, a + i0 * lda + p0, lda, as.data(), kk);
        for (std::int64_t r = j0; r < j1; r += nb) {
          const std::int64_t nn = std::min(nb, j1 - r);
          detail::round_rows(nn, kk, b + r * ldb + p0, ldb, bs.data(), kk);
          TINYNET_ISA_NAMESPACE::gemm_nt(i1 - i0, nn, kk, as.data(), kk, bs.data(), kk, c + i0 * ldc + r, ldc);
        }
      }
    }
  });
#else
  if constexpr (std::is_same_v<A, float>) {
    ScratchFloats as(bf16_operand_floats(m, k)), bs(bf16_operand_floats(n, k));
    const Operand a16 = rows(m, k, a, lda, as.data()), b16 = rows(n, k, b, ldb, bs.data());
    parallel_for(split.parts, 1, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t p = lo; p < hi; ++p) {
        const auto [i0, i1, j0, j1] = part(p);
        gemm_nt(i1 - i0, j1 - j0, k, skip_rows(a16, i0), skip_rows(b16, j0), c + i0 * ldc + j0, ldc);
      }
    });
  } else {
    throw Error("bfloat16 operands need the avx2 level or above");
  }
#endif
}

}  // namespace bf16
