/// \file
/// Philox4x32-10 for a vector of consecutive counters at once (sixteen with AVX-512, eight
/// with AVX2): the same draws as tinynet::detail::Philox4x32::generate (core/random.hpp),
/// one counter per 32-bit lane, for kernels that need millions of draws per step (dropout
/// masks). The 32-bit integer operations it needs are wrapped here (U32) as vec.inl wraps
/// the float ones.

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2

namespace detail {

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
using U32 = __m512i;
// All lanes kept: the zero-masking forms of these instructions, as in gemm_nt.inl, because
// GCC 12's plain forms start from an "undefined" register that -Wmaybe-uninitialized reports.
constexpr __mmask8 kAll8 = 0xFF;
constexpr __mmask16 kAll16 = 0xFFFF;

inline U32 u32_load(const std::uint32_t* p) { return _mm512_loadu_si512(p); }
inline U32 u32_set1(std::uint32_t x) { return _mm512_set1_epi32(static_cast<int>(x)); }
inline U32 u32_xor(U32 a, U32 b) { return _mm512_xor_si512(a, b); }
inline U32 u32_mullo(U32 a, U32 b) { return _mm512_mullo_epi32(a, b); }
/// High 32 bits of the 32x32 product in every lane: even lanes from one widening
/// multiply, odd lanes from another on the shifted operand.
inline U32 u32_mulhi(U32 a, U32 m) {
  const U32 even = _mm512_maskz_srli_epi64(kAll8, _mm512_maskz_mul_epu32(kAll8, a, m), 32);
  const U32 odd = _mm512_maskz_mul_epu32(kAll8, _mm512_maskz_srli_epi64(kAll8, a, 32), m);
  return _mm512_mask_blend_epi32(static_cast<__mmask16>(0xAAAA), even, odd);
}
/// keep where draw >= threshold (unsigned), drop elsewhere.
inline Vec u32_select_ge(U32 draw, U32 threshold, Vec keep, Vec drop) {
  return {_mm512_mask_blend_ps(_mm512_cmpge_epu32_mask(draw, threshold), drop.v, keep.v)};
}
#else
using U32 = __m256i;

inline U32 u32_load(const std::uint32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline U32 u32_set1(std::uint32_t x) { return _mm256_set1_epi32(static_cast<int>(x)); }
inline U32 u32_xor(U32 a, U32 b) { return _mm256_xor_si256(a, b); }
inline U32 u32_mullo(U32 a, U32 b) { return _mm256_mullo_epi32(a, b); }
inline U32 u32_mulhi(U32 a, U32 m) {
  const U32 even = _mm256_srli_epi64(_mm256_mul_epu32(a, m), 32);
  const U32 odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
  return _mm256_blend_epi32(even, odd, 0xAA);
}
inline Vec u32_select_ge(U32 draw, U32 threshold, Vec keep, Vec drop) {
  // Unsigned draw >= threshold exactly when max(draw, threshold) == draw.
  const __m256i ge = _mm256_cmpeq_epi32(_mm256_max_epu32(draw, threshold), draw);
  return {_mm256_blendv_ps(drop.v, keep.v, _mm256_castsi256_ps(ge))};
}
#endif

}  // namespace detail

/// Draws of counters counter0 .. counter0 + kLanes - 1 under `key`, in draw-major order:
/// out[0] holds draw 0 of each counter (lane l: counter0 + l), out[1] draw 1, and so on.
inline void philox4x32_lanes(std::uint64_t key, std::uint64_t counter0, detail::U32 out[4]) {
  using namespace detail;
  std::uint32_t lo[kLanes], hi[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    const std::uint64_t c = counter0 + static_cast<std::uint64_t>(l);
    lo[l] = static_cast<std::uint32_t>(c);
    hi[l] = static_cast<std::uint32_t>(c >> 32);
  }
  U32 c0 = u32_load(lo), c1 = u32_load(hi), c2 = u32_set1(0), c3 = u32_set1(0);
  std::uint32_t k0 = static_cast<std::uint32_t>(key), k1 = static_cast<std::uint32_t>(key >> 32);
  const U32 m0 = u32_set1(0xD2511F53u), m1 = u32_set1(0xCD9E8D57u);
  for (int round = 0; round < 10; ++round) {
    const U32 hi0 = u32_mulhi(c0, m0), lo0 = u32_mullo(c0, m0);
    const U32 hi1 = u32_mulhi(c2, m1), lo1 = u32_mullo(c2, m1);
    const U32 n0 = u32_xor(u32_xor(hi1, c1), u32_set1(k0));
    const U32 n2 = u32_xor(u32_xor(hi0, c3), u32_set1(k1));
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

/// Reorders philox4x32_lanes's draw-major output into counter-major order: out[j] holds the
/// four draws of each of its counters in sequence (element u of a stream at kLanes * j +
/// (u % kLanes)).
inline void philox_counter_major(const detail::U32 d[4], detail::U32 out[4]) {
  using namespace detail;
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
  // 4x4 transposes of 32-bit elements within each 128-bit lane, then of the lanes.
  const U32 t0 = _mm512_maskz_unpacklo_epi32(kAll16, d[0], d[1]), t1 = _mm512_maskz_unpackhi_epi32(kAll16, d[0], d[1]);
  const U32 t2 = _mm512_maskz_unpacklo_epi32(kAll16, d[2], d[3]), t3 = _mm512_maskz_unpackhi_epi32(kAll16, d[2], d[3]);
  const U32 u0 = _mm512_maskz_unpacklo_epi64(kAll8, t0, t2), u1 = _mm512_maskz_unpackhi_epi64(kAll8, t0, t2);
  const U32 u2 = _mm512_maskz_unpacklo_epi64(kAll8, t1, t3), u3 = _mm512_maskz_unpackhi_epi64(kAll8, t1, t3);
  const U32 v0 = _mm512_maskz_shuffle_i32x4(kAll16, u0, u1, _MM_SHUFFLE(1, 0, 1, 0));
  const U32 v1 = _mm512_maskz_shuffle_i32x4(kAll16, u2, u3, _MM_SHUFFLE(1, 0, 1, 0));
  const U32 v2 = _mm512_maskz_shuffle_i32x4(kAll16, u0, u1, _MM_SHUFFLE(3, 2, 3, 2));
  const U32 v3 = _mm512_maskz_shuffle_i32x4(kAll16, u2, u3, _MM_SHUFFLE(3, 2, 3, 2));
  out[0] = _mm512_maskz_shuffle_i32x4(kAll16, v0, v1, _MM_SHUFFLE(2, 0, 2, 0));
  out[1] = _mm512_maskz_shuffle_i32x4(kAll16, v0, v1, _MM_SHUFFLE(3, 1, 3, 1));
  out[2] = _mm512_maskz_shuffle_i32x4(kAll16, v2, v3, _MM_SHUFFLE(2, 0, 2, 0));
  out[3] = _mm512_maskz_shuffle_i32x4(kAll16, v2, v3, _MM_SHUFFLE(3, 1, 3, 1));
#else
  // 4x4 transposes within each 128-bit half (counters l and l + 4), then the halves.
  const U32 t0 = _mm256_unpacklo_epi32(d[0], d[1]), t1 = _mm256_unpackhi_epi32(d[0], d[1]);
  const U32 t2 = _mm256_unpacklo_epi32(d[2], d[3]), t3 = _mm256_unpackhi_epi32(d[2], d[3]);
  const U32 u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
  const U32 u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
  out[0] = _mm256_permute2x128_si256(u0, u1, 0x20);
  out[1] = _mm256_permute2x128_si256(u2, u3, 0x20);
  out[2] = _mm256_permute2x128_si256(u0, u1, 0x31);
  out[3] = _mm256_permute2x128_si256(u2, u3, 0x31);
#endif
}

#endif  // TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
