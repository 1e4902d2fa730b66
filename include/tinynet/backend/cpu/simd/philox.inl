/// \file
/// Philox4x32-10 for 16 consecutive counters at once with AVX-512: the same draws as
/// tinynet::detail::Philox4x32::generate (core/random.hpp), one counter per 32-bit lane,
/// for kernels that need millions of draws per step (dropout masks).

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512

namespace detail {
// All lanes kept: the zero-masking forms of these instructions, as in gemm_nt.inl, because
// GCC 12's plain forms start from an "undefined" register that -Wmaybe-uninitialized reports.
constexpr __mmask8 kAll8 = 0xFF;
constexpr __mmask16 kAll16 = 0xFFFF;

/// High 32 bits of the 32x32 product in every lane: even lanes from one widening
/// multiply, odd lanes from another on the shifted operand.
inline __m512i mulhi32(__m512i a, __m512i m) {
  const __m512i even = _mm512_maskz_srli_epi64(kAll8, _mm512_maskz_mul_epu32(kAll8, a, m), 32);
  const __m512i odd = _mm512_maskz_mul_epu32(kAll8, _mm512_maskz_srli_epi64(kAll8, a, 32), m);
  return _mm512_mask_blend_epi32(static_cast<__mmask16>(0xAAAA), even, odd);
}
}  // namespace detail

/// Draws of counters counter0 .. counter0 + 15 under `key`, in draw-major order:
/// out[0] holds draw 0 of each counter (lane l: counter0 + l), out[1] draw 1, and so on.
inline void philox4x32_x16(std::uint64_t key, std::uint64_t counter0, __m512i out[4]) {
  alignas(64) std::uint32_t lo[16], hi[16];
  for (int l = 0; l < 16; ++l) {
    const std::uint64_t c = counter0 + static_cast<std::uint64_t>(l);
    lo[l] = static_cast<std::uint32_t>(c);
    hi[l] = static_cast<std::uint32_t>(c >> 32);
  }
  __m512i c0 = _mm512_load_si512(lo), c1 = _mm512_load_si512(hi);
  __m512i c2 = _mm512_setzero_si512(), c3 = _mm512_setzero_si512();
  std::uint32_t k0 = static_cast<std::uint32_t>(key), k1 = static_cast<std::uint32_t>(key >> 32);
  const __m512i m0 = _mm512_set1_epi32(static_cast<int>(0xD2511F53u));
  const __m512i m1 = _mm512_set1_epi32(static_cast<int>(0xCD9E8D57u));
  for (int round = 0; round < 10; ++round) {
    const __m512i hi0 = detail::mulhi32(c0, m0), lo0 = _mm512_mullo_epi32(c0, m0);
    const __m512i hi1 = detail::mulhi32(c2, m1), lo1 = _mm512_mullo_epi32(c2, m1);
    const __m512i n0 = _mm512_xor_si512(_mm512_xor_si512(hi1, c1), _mm512_set1_epi32(static_cast<int>(k0)));
    const __m512i n2 = _mm512_xor_si512(_mm512_xor_si512(hi0, c3), _mm512_set1_epi32(static_cast<int>(k1)));
    c1 = lo1;
    c3 = lo0;
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/// Reorders philox4x32_x16's draw-major output into counter-major order: out[j] holds the
/// four draws of counters 4j .. 4j+3 in sequence (element u of a stream at 16*j + (u % 16)).
inline void philox_counter_major(const __m512i d[4], __m512i out[4]) {
  // 4x4 transposes of 32-bit elements within each 128-bit lane, then of the lanes.
  const __m512i t0 = _mm512_maskz_unpacklo_epi32(detail::kAll16, d[0], d[1]),
                t1 = _mm512_maskz_unpackhi_epi32(detail::kAll16, d[0], d[1]);
  const __m512i t2 = _mm512_maskz_unpacklo_epi32(detail::kAll16, d[2], d[3]),
                t3 = _mm512_maskz_unpackhi_epi32(detail::kAll16, d[2], d[3]);
  const __m512i u0 = _mm512_maskz_unpacklo_epi64(detail::kAll8, t0, t2),
                u1 = _mm512_maskz_unpackhi_epi64(detail::kAll8, t0, t2);
  const __m512i u2 = _mm512_maskz_unpacklo_epi64(detail::kAll8, t1, t3),
                u3 = _mm512_maskz_unpackhi_epi64(detail::kAll8, t1, t3);
  const __m512i v0 = _mm512_maskz_shuffle_i32x4(detail::kAll16, u0, u1, _MM_SHUFFLE(1, 0, 1, 0));
  const __m512i v1 = _mm512_maskz_shuffle_i32x4(detail::kAll16, u2, u3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m512i v2 = _mm512_maskz_shuffle_i32x4(detail::kAll16, u0, u1, _MM_SHUFFLE(3, 2, 3, 2));
  const __m512i v3 = _mm512_maskz_shuffle_i32x4(detail::kAll16, u2, u3, _MM_SHUFFLE(3, 2, 3, 2));
  out[0] = _mm512_maskz_shuffle_i32x4(detail::kAll16, v0, v1, _MM_SHUFFLE(2, 0, 2, 0));
  out[1] = _mm512_maskz_shuffle_i32x4(detail::kAll16, v0, v1, _MM_SHUFFLE(3, 1, 3, 1));
  out[2] = _mm512_maskz_shuffle_i32x4(detail::kAll16, v2, v3, _MM_SHUFFLE(2, 0, 2, 0));
  out[3] = _mm512_maskz_shuffle_i32x4(detail::kAll16, v2, v3, _MM_SHUFFLE(3, 1, 3, 1));
}

#endif  // TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
