/// \file
/// autocast's bfloat16 operands at one vector level (the products: bf16_products.inl): both
/// operands of a product rounded to bfloat16 (nearest, ties to even) before it multiplies.
/// An operand is prepared as `rows` (for one read along its rows: the left operand of
/// gemm_rows, either operand of gemm_nt) or as `pairs` (gemm_rows' right operand).
///
/// At the avx512_bf16 level (a CPU with AVX512-BF16: Level::native_bf16) the operands hold
/// bfloat16 pairs for `vdpbf16ps`: rows padded to an even length, or, for gemm_rows' right
/// operand, two rows interleaved (pairs along k), so that one 32-bit broadcast of the left
/// operand meets a vector of pairs. Like the instruction, these conversions flush float32
/// denormals to zero. Everywhere else they are bfloat16 values held in float32, which the
/// float32 kernels multiply.

namespace bf16 {

/// Whether products run on vdpbf16ps here: a constant of the level.
inline constexpr bool kNative = Level::native_bf16;

using Operand = Bf16Operand;

/// The operand prepared with rows() from its row r on.
inline Operand skip_rows(Operand a, std::int64_t r) {
  return {static_cast<const char*>(a.data) + r * a.ld * (kNative ? 2 : 4), a.ld};
}

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512_BF16

namespace detail {

using TINYNET_ISA_NAMESPACE::detail::lanes_between;

/// 32 bfloat16 from the first n (<= 32) of the floats at p, zeros after them.
inline __m512i convert32(const float* p, std::int64_t n) {
  const __m512 lo = _mm512_maskz_loadu_ps(lanes_between(0, n), p);
  const __m512 hi = _mm512_maskz_loadu_ps(lanes_between(0, n - 16), p + 16);
  return reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
}

/// store_elems where the CPU has AVX512-BF16: a bfloat16 destination is rounded by
/// vcvtneps2bf16, store_elems' rounding (nearest, ties to even; a NaN kept quiet) in one
/// instruction, except that it flushes denormals to zero, so a vector holding one takes
/// store_elems. Only at the avx512_bf16 level.
inline void store_native(float* p, Mask m, Vec v) { v.store(p, m); }
inline void store_native(bfloat16* p, Mask m, Vec v) {
  constexpr int kDenormal = 0x20;  // vfpclassps' category
  if (_mm512_mask_fpclass_ps_mask(m, v.v, kDenormal) != 0) return store_elems(p, m, v);
  _mm256_mask_storeu_epi16(p, m, reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v.v)));
}

/// Rows of bfloat16 from rows of floats, each padded with zeros to an even length. With
/// `next`, the first `next_rows` rows of k floats there (lds apart) are prefetched into L2
/// along the way, so that rounding them later does not wait on memory.
inline void rows(std::int64_t r, std::int64_t k, const float* src, std::int64_t lds, std::uint16_t* dst,
                 std::int64_t ldd, const float* next = nullptr, std::int64_t next_rows = 0) {
  for (std::int64_t i = 0; i < r; ++i) {
    const float* s = src + i * lds;
    const float* ahead = i < next_rows ? next + i * lds : nullptr;
    std::uint16_t* d = dst + i * ldd;
    for (std::int64_t p = 0; p < ldd; p += 32) {
      const std::int64_t n = std::min<std::int64_t>(32, ldd - p);
      if (ahead != nullptr && p < k) {
        _mm_prefetch(reinterpret_cast<const char*>(ahead + p), _MM_HINT_T1);
        _mm_prefetch(reinterpret_cast<const char*>(ahead + std::min(p + 16, k - 1)), _MM_HINT_T1);
      }
      _mm512_mask_storeu_epi16(d + p, static_cast<__mmask32>(n >= 32 ? ~0u : (1u << n) - 1u),
                               convert32(s + p, std::max<std::int64_t>(0, std::min(n, k - p))));
    }
  }
}

/// dst[i][j] = the bfloat16 pair (src[2i][j], src[2i + 1][j]), the second zero past k rows.
/// With `ahead` > 0, the n columns `ahead` columns further on are prefetched into L2 along
/// the way (the next panel of gemm_rows_panels).
inline void pairs(std::int64_t k, std::int64_t n, const float* src, std::int64_t lds, std::uint32_t* dst,
                  std::int64_t ldd, std::int64_t ahead = 0) {
  // Word t of the result takes word t / 2 of lo's conversions (t even) or of hi's (t odd).
  alignas(64) static constexpr std::uint16_t order[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                                          8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i perm = _mm512_load_si512(order);
  for (std::int64_t i = 0; 2 * i < k; ++i) {
    const float* lo_row = src + 2 * i * lds;
    const float* hi_row = 2 * i + 1 < k ? lo_row + lds : nullptr;
    std::uint32_t* d = dst + i * ldd;
    for (std::int64_t j = 0; j < n; j += 16) {
      const __mmask16 m = lanes_between(0, n - j);
      if (ahead > 0) {
        _mm_prefetch(reinterpret_cast<const char*>(lo_row + ahead + j), _MM_HINT_T1);
        if (hi_row != nullptr) _mm_prefetch(reinterpret_cast<const char*>(hi_row + ahead + j), _MM_HINT_T1);
      }
      const __m512 lo = _mm512_maskz_loadu_ps(m, lo_row + j);
      const __m512 hi = hi_row != nullptr ? _mm512_maskz_loadu_ps(m, hi_row + j) : _mm512_setzero_ps();
      const __m512i both = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
      _mm512_mask_storeu_epi32(d + j, m, _mm512_permutexvar_epi16(perm, both));
    }
  }
}

/// pairs from rows of bfloat16 (autocast's activations): their words interleaved as they
/// are, nothing rounded.
inline void pairs(std::int64_t k, std::int64_t n, const bfloat16* src, std::int64_t lds, std::uint32_t* dst,
                  std::int64_t ldd, std::int64_t ahead = 0) {
  const auto* words = reinterpret_cast<const std::uint16_t*>(src);
  for (std::int64_t i = 0; 2 * i < k; ++i) {
    const std::uint16_t* lo_row = words + 2 * i * lds;
    const std::uint16_t* hi_row = 2 * i + 1 < k ? lo_row + lds : nullptr;
    std::uint32_t* d = dst + i * ldd;
    for (std::int64_t j = 0; j < n; j += 16) {
      const __mmask16 m = lanes_between(0, n - j);
      if (ahead > 0) {
        _mm_prefetch(reinterpret_cast<const char*>(lo_row + ahead + j), _MM_HINT_T1);
        if (hi_row != nullptr) _mm_prefetch(reinterpret_cast<const char*>(hi_row + ahead + j), _MM_HINT_T1);
      }
      const __m512i lo = _mm512_maskz_cvtepu16_epi32(m, _mm256_maskz_loadu_epi16(m, lo_row + j));
      const __m512i hi = hi_row != nullptr ? _mm512_maskz_cvtepu16_epi32(m, _mm256_maskz_loadu_epi16(m, hi_row + j))
                                           : _mm512_setzero_si512();
      _mm512_mask_storeu_epi32(d + j, m, _mm512_or_si512(lo, _mm512_maskz_slli_epi32(m, hi, 16)));
    }
  }
}

/// dst[j][i] = src[i][j] for r rows of n 32-bit words (bfloat16 pairs), 16 x 16 at a time
/// in registers: rows of pairs (a left operand) made gemm_rows' right operand.
inline void transpose_words(std::int64_t r, std::int64_t n, const std::uint32_t* src, std::int64_t lds,
                            std::uint32_t* dst, std::int64_t ldd) {
  constexpr __mmask16 all = 0xFFFF;  // zero-masking forms: see gemm_nt.inl's shuffles
  for (std::int64_t i0 = 0; i0 < r; i0 += 16)
    for (std::int64_t j0 = 0; j0 < n; j0 += 16) {
      const __mmask16 cols = lanes_between(0, n - j0), rows = lanes_between(0, r - i0);
      __m512i t[16], u[16];
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) {
        t[i] = i0 + i < r ? _mm512_maskz_loadu_epi32(cols, src + (i0 + i) * lds + j0) : _mm512_setzero_si512();
      }
      // Per 128-bit lane L, t[4k + c] ends up holding column 4L + c of rows 4k .. 4k + 3.
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) {
        u[2 * k] = _mm512_maskz_unpacklo_epi32(all, t[2 * k], t[2 * k + 1]);
        u[2 * k + 1] = _mm512_maskz_unpackhi_epi32(all, t[2 * k], t[2 * k + 1]);
      }
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        t[4 * k] = _mm512_maskz_unpacklo_epi64(0xFF, u[4 * k], u[4 * k + 2]);
        t[4 * k + 1] = _mm512_maskz_unpackhi_epi64(0xFF, u[4 * k], u[4 * k + 2]);
        t[4 * k + 2] = _mm512_maskz_unpacklo_epi64(0xFF, u[4 * k + 1], u[4 * k + 3]);
        t[4 * k + 3] = _mm512_maskz_unpackhi_epi64(0xFF, u[4 * k + 1], u[4 * k + 3]);
      }
      // Column 4L + c: lane L of t[c], t[4 + c], t[8 + c] and t[12 + c].
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        const __m512i s01 = _mm512_maskz_shuffle_i32x4(all, t[c], t[4 + c], 0x44);
        const __m512i s23 = _mm512_maskz_shuffle_i32x4(all, t[c], t[4 + c], 0xEE);
        const __m512i s45 = _mm512_maskz_shuffle_i32x4(all, t[8 + c], t[12 + c], 0x44);
        const __m512i s67 = _mm512_maskz_shuffle_i32x4(all, t[8 + c], t[12 + c], 0xEE);
        const __m512i out[4] = {
            _mm512_maskz_shuffle_i32x4(all, s01, s45, 0x88), _mm512_maskz_shuffle_i32x4(all, s01, s45, 0xDD),
            _mm512_maskz_shuffle_i32x4(all, s23, s67, 0x88), _mm512_maskz_shuffle_i32x4(all, s23, s67, 0xDD)};
#pragma GCC unroll 4
        for (int l = 0; l < 4; ++l)
          if (j0 + 4 * l + c < n) _mm512_mask_storeu_epi32(dst + (j0 + 4 * l + c) * ldd + i0, rows, out[l]);
      }
    }
}

}  // namespace detail

#endif  // TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512_BF16

/// Calls f(r0, r1) over [0, rows): split over the threads when the operand is large
/// (linear's weights: the conversion is a pass over memory) and not prepared in place
/// (in place, each row is written over rows already read, so rows go in order).
template <typename F>
void for_row_parts(std::int64_t rows, std::int64_t cols, bool in_place, F&& f) {
  const std::int64_t parts =
      in_place || rows * cols < (std::int64_t{1} << 18) ? 1 : std::min<std::int64_t>(rows, get_num_threads());
  if (parts == 1) return f(std::int64_t{0}, rows);
  parallel_for(parts, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t p = lo; p < hi; ++p) f(p * rows / parts, (p + 1) * rows / parts);
  });
}

/// Rounds r rows of k floats to bfloat16 for a product that reads them along the rows (the
/// left operand of gemm_rows, either operand of gemm_nt). `buf`: bf16_operand_floats(r, k)
/// floats, or `src` itself (the operand is written no later than it is read).
inline Operand rows(std::int64_t r, std::int64_t k, const float* src, std::int64_t lds, float* buf) {
  const bool in_place = src == buf;
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512_BF16
  {
    const std::int64_t ld = (k + 1) / 2 * 2;
    auto* dst = reinterpret_cast<std::uint16_t*>(buf);
    for_row_parts(r, k, in_place, [&](std::int64_t r0, std::int64_t r1) {
      detail::rows(r1 - r0, k, src + r0 * lds, lds, dst + r0 * ld, ld);
    });
    return {buf, ld};
  }
#endif
  for_row_parts(r, k, in_place, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t i = r0; i < r1; ++i) tinynet::detail::round_to_bf16(src + i * lds, k, buf + i * k);
  });
  return {buf, k};
}

/// rows() for r rows of k floats whose values are bfloat16's already (autocast's
/// activations, widened): where the products take floats they are the operand as they
/// stand, nothing rounded and `buf` unused; with vdpbf16ps, rows(). `buf`:
/// exact_rows_floats(r, k) floats.
inline std::int64_t exact_rows_floats(std::int64_t r, std::int64_t k) {
  return kNative ? bf16_operand_floats(r, k) : 0;
}
inline Operand exact_rows(std::int64_t r, std::int64_t k, const float* src, std::int64_t lds, float* buf) {
  if constexpr (kNative) return rows(r, k, src, lds, buf);
  return {src, lds};
}

/// Rounds the right operand of gemm_rows, k rows of n floats, to bfloat16. `buf`:
/// bf16_operand_floats(k, n) floats, or `src` itself.
inline Operand pairs(std::int64_t k, std::int64_t n, const float* src, std::int64_t lds, float* buf) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512_BF16
  {
    auto* dst = reinterpret_cast<std::uint32_t*>(buf);
    for_row_parts((k + 1) / 2, 2 * n, src == buf, [&](std::int64_t p0, std::int64_t p1) {
      detail::pairs(std::min(k, 2 * p1) - 2 * p0, n, src + 2 * p0 * lds, lds, dst + p0 * n, n);
    });
    return {buf, n};
  }
#endif
  return rows(k, n, src, lds, buf);
}

/// Rounds `count` samples of c (even) channels of hw floats each into pairs of channels,
/// dst[s][i][p] = (src[s][2i][p], src[s][2i + 1][p]): copied as they are (im2col), they
/// make gemm_rows' right operand with pairs along the channels. Only at the avx512_bf16 level.
inline void channel_pairs([[maybe_unused]] std::int64_t count, [[maybe_unused]] std::int64_t c,
                          [[maybe_unused]] std::int64_t hw, [[maybe_unused]] const float* src,
                          [[maybe_unused]] std::uint32_t* dst) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512_BF16
  for (std::int64_t s = 0; s < count; ++s) detail::pairs(c, hw, src + s * c * hw, hw, dst + s * c / 2 * hw, hw);
#endif
}

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512_BF16
/// channel_pairs from bfloat16 channels (autocast's activations): their words interleaved
/// as they are.
inline void channel_pairs(std::int64_t count, std::int64_t c, std::int64_t hw, const bfloat16* src,
                          std::uint32_t* dst) {
  for (std::int64_t s = 0; s < count; ++s) detail::pairs(c, hw, src + s * c * hw, hw, dst + s * c / 2 * hw, hw);
}
#endif

}  // namespace bf16
