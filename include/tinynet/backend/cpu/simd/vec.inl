/// \file
/// Vec: one vector register of floats at this level (sixteen with AVX-512, eight with
/// AVX2), with the operations the kernels are written in, so that one kernel source runs at
/// either width: loads and stores (whole, or lanes chosen by a Mask, never touching the
/// others), + - * /, fused multiply-add, sqrt, ReLU, and a sum across lanes in a fixed
/// order. The arithmetic operators also let one optimizer rule, written over a value type
/// V, run per element (V = float, on the CPU or a GPU) and a vector at a time here:
/// compilers do not vectorise the scalar rule themselves (std::sqrt may set errno).
///
/// Masks: AVX-512 has mask registers (__mmask16); AVX2 masks are vectors of all-ones lanes
/// (__m256i), as its masked loads and stores take them.

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
constexpr int kLanes = 16;
using Mask = __mmask16;
#else
constexpr int kLanes = 8;
using Mask = __m256i;
#endif

namespace detail {

/// Lanes [lo, hi) clipped to [0, kLanes); none when the range is empty.
inline Mask lanes_between(std::int64_t lo, std::int64_t hi) {
  lo = lo < 0 ? 0 : lo;
  hi = hi > kLanes ? kLanes : hi;
  if (hi <= lo) hi = lo = 0;
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
  return static_cast<__mmask16>(((1u << hi) - 1u) & ~((1u << lo) - 1u));
#else
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_and_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(hi)), lane),
                          _mm256_cmpgt_epi32(lane, _mm256_set1_epi32(static_cast<int>(lo) - 1)));
#endif
}

/// Lanes [0, min(kLanes, left)).
inline Mask tail_mask(std::int64_t left) { return lanes_between(0, left); }

/// Whether m has any lane.
inline bool any(Mask m) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
  return m != 0;
#else
  return !_mm256_testz_si256(m, m);
#endif
}

}  // namespace detail

struct Vec {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
  __m512 v;

  static Vec zero() { return {_mm512_setzero_ps()}; }
  static Vec set1(float x) { return {_mm512_set1_ps(x)}; }
  static Vec load(const float* p) { return {_mm512_loadu_ps(p)}; }
  /// The lanes in m from p, zero elsewhere (the others are not read).
  static Vec load(const float* p, Mask m) { return {_mm512_maskz_loadu_ps(m, p)}; }
  void store(float* p) const { _mm512_storeu_ps(p, v); }
  /// The lanes in m to p (the others are not written).
  void store(float* p, Mask m) const { _mm512_mask_storeu_ps(p, m, v); }
#else
  __m256 v;

  static Vec zero() { return {_mm256_setzero_ps()}; }
  static Vec set1(float x) { return {_mm256_set1_ps(x)}; }
  static Vec load(const float* p) { return {_mm256_loadu_ps(p)}; }
  static Vec load(const float* p, Mask m) { return {_mm256_maskload_ps(p, m)}; }
  void store(float* p) const { _mm256_storeu_ps(p, v); }
  void store(float* p, Mask m) const { _mm256_maskstore_ps(p, m, v); }
#endif
};

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
inline Vec operator+(Vec a, Vec b) { return {_mm512_add_ps(a.v, b.v)}; }
inline Vec operator-(Vec a, Vec b) { return {_mm512_sub_ps(a.v, b.v)}; }
inline Vec operator*(Vec a, Vec b) { return {_mm512_mul_ps(a.v, b.v)}; }
inline Vec operator/(Vec a, Vec b) { return {_mm512_div_ps(a.v, b.v)}; }
/// a * b + c, rounded once.
inline Vec fmadd(Vec a, Vec b, Vec c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
// The zero-masking form with every lane kept: GCC 12's plain form starts from an
// "undefined" register that -Wmaybe-uninitialized reports.
inline Vec sqrt(Vec a) { return {_mm512_maskz_sqrt_ps(__mmask16(0xFFFF), a.v)}; }
/// Zero where a <= 0, as relu's `x > 0 ? x : 0` (NaN fails the test and stays).
inline Vec relu(Vec a) {
  return {_mm512_mask_mov_ps(a.v, _mm512_cmp_ps_mask(a.v, _mm512_setzero_ps(), _CMP_LE_OQ), _mm512_setzero_ps())};
}
/// s where y > 0, zero elsewhere (also where y is NaN): a gradient through a ReLU whose
/// output was y.
inline Vec where_positive(Vec y, Vec s) {
  return {_mm512_maskz_mov_ps(_mm512_cmp_ps_mask(y.v, _mm512_setzero_ps(), _CMP_GT_OQ), s.v)};
}
/// v with the lanes in m loaded from p (the others kept, and not read).
inline Vec load_into(Vec v, Mask m, const float* p) { return {_mm512_mask_loadu_ps(v.v, m, p)}; }

// bfloat16 activations (autocast) are widened to float as loaded and rounded as stored.
// (The zero-masking forms, with the lanes loaded or stored: GCC 12 warns that the plain
// forms read an undefined vector.)
/// The bfloat16 at p in the lanes of m as floats (exact), zero elsewhere (not read).
inline Vec load_elems(const bfloat16* p, Mask m) {
  const __m256i words = _mm256_maskz_loadu_epi16(m, reinterpret_cast<const std::uint16_t*>(p));
  return {_mm512_castsi512_ps(_mm512_maskz_slli_epi32(m, _mm512_maskz_cvtepu16_epi32(m, words), 16))};
}
inline Vec load_into(Vec v, Mask m, const bfloat16* p) { return {_mm512_mask_mov_ps(v.v, m, load_elems(p, m).v)}; }
namespace detail {
/// Every lane, for the masked shift forms (GCC 12 warns that the plain ones read an
/// undefined vector).
constexpr __mmask16 kAllLanes = 0xFFFF;
/// Each lane's bfloat16 (as bfloat16(float) rounds it: to nearest, ties to even, a NaN kept
/// a quiet NaN) in its upper 16 bits; the lower ones are left over.
inline __m512i bf16_in_upper_half(Vec v) {
  const __m512i u = _mm512_castps_si512(v.v);
  const __m512i odd = _mm512_and_si512(_mm512_maskz_srli_epi32(kAllLanes, u, 16), _mm512_set1_epi32(1));
  const __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7FFF)));
  return _mm512_mask_or_epi32(r, _mm512_cmp_ps_mask(v.v, v.v, _CMP_UNORD_Q), u, _mm512_set1_epi32(0x00400000));
}
}  // namespace detail
/// The lanes of v in m rounded to bfloat16 at p, as bfloat16(float) rounds them.
inline void store_elems(bfloat16* p, Mask m, Vec v) {
  _mm512_mask_cvtepi32_storeu_epi16(reinterpret_cast<std::uint16_t*>(p), m,
                                    _mm512_maskz_srli_epi32(m, detail::bf16_in_upper_half(v), 16));
}
/// v's lanes rounded to bfloat16 values, kept as floats.
inline Vec round_bf16(Vec v) {
  return {_mm512_castsi512_ps(
      _mm512_and_si512(detail::bf16_in_upper_half(v), _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))))};
}
/// The sum of the lanes: halves, then quarters, then pairs (_mm512_reduce_add_ps's order,
/// in forms GCC 12 does not report as reading an undefined register).
inline float sum(Vec a) {
  const __m256 h =
      _mm256_add_ps(_mm512_maskz_extractf32x8_ps(0xFF, a.v, 0), _mm512_maskz_extractf32x8_ps(0xFF, a.v, 1));
  const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  const __m128 e = _mm_add_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_add_ss(e, _mm_shuffle_ps(e, e, 1)));
}
#else
inline Vec operator+(Vec a, Vec b) { return {_mm256_add_ps(a.v, b.v)}; }
inline Vec operator-(Vec a, Vec b) { return {_mm256_sub_ps(a.v, b.v)}; }
inline Vec operator*(Vec a, Vec b) { return {_mm256_mul_ps(a.v, b.v)}; }
inline Vec operator/(Vec a, Vec b) { return {_mm256_div_ps(a.v, b.v)}; }
inline Vec fmadd(Vec a, Vec b, Vec c) { return {_mm256_fmadd_ps(a.v, b.v, c.v)}; }
inline Vec sqrt(Vec a) { return {_mm256_sqrt_ps(a.v)}; }
inline Vec relu(Vec a) {
  const __m256 zero = _mm256_setzero_ps();
  return {_mm256_blendv_ps(a.v, zero, _mm256_cmp_ps(a.v, zero, _CMP_LE_OQ))};
}
inline Vec where_positive(Vec y, Vec s) {
  return {_mm256_and_ps(_mm256_cmp_ps(y.v, _mm256_setzero_ps(), _CMP_GT_OQ), s.v)};
}
inline Vec load_into(Vec v, Mask m, const float* p) {
  return {_mm256_blendv_ps(v.v, _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m))};
}

// bfloat16 activations (autocast), widened as loaded and rounded as stored, as at the
// AVX-512 level. AVX2 has no masked 16-bit loads and stores: all eight lanes move as one
// 128-bit word vector, fewer (a run's tail) element by element.
/// The bfloat16 at p in the lanes of m as floats (exact), zero elsewhere (not read).
inline Vec load_elems(const bfloat16* p, Mask m) {
  const auto* w = reinterpret_cast<const std::uint16_t*>(p);
  const int lanes = _mm256_movemask_ps(_mm256_castsi256_ps(m));
  __m128i words;
  if (lanes == 0xFF) {
    words = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w));
  } else {
    alignas(16) std::uint16_t part[8] = {};
    for (int i = 0; i < 8; ++i)
      if (lanes >> i & 1) part[i] = w[i];
    words = _mm_load_si128(reinterpret_cast<const __m128i*>(part));
  }
  return {_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(words), 16))};
}
inline Vec load_into(Vec v, Mask m, const bfloat16* p) {
  return {_mm256_blendv_ps(v.v, load_elems(p, m).v, _mm256_castsi256_ps(m))};
}
namespace detail {
/// Each lane's bfloat16 (as bfloat16(float) rounds it: to nearest, ties to even, a NaN kept
/// a quiet NaN) in its upper 16 bits; the lower ones are left over.
inline __m256i bf16_in_upper_half(Vec v) {
  const __m256i u = _mm256_castps_si256(v.v);
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7FFF)));
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v.v, v.v, _CMP_UNORD_Q));
  return _mm256_blendv_epi8(r, _mm256_or_si256(u, _mm256_set1_epi32(0x00400000)), nan);
}
}  // namespace detail
/// v's lanes rounded to bfloat16 values, kept as floats.
inline Vec round_bf16(Vec v) {
  return {_mm256_castsi256_ps(
      _mm256_and_si256(detail::bf16_in_upper_half(v), _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))))};
}
/// The lanes of v in m rounded to bfloat16 at p, as bfloat16(float) rounds them.
inline void store_elems(bfloat16* p, Mask m, Vec v) {
  const __m256i r = _mm256_srli_epi32(detail::bf16_in_upper_half(v), 16);
  const __m128i words = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
  auto* w = reinterpret_cast<std::uint16_t*>(p);
  const int lanes = _mm256_movemask_ps(_mm256_castsi256_ps(m));
  if (lanes == 0xFF) return _mm_storeu_si128(reinterpret_cast<__m128i*>(w), words);
  alignas(16) std::uint16_t part[8];
  _mm_store_si128(reinterpret_cast<__m128i*>(part), words);
  for (int i = 0; i < 8; ++i)
    if (lanes >> i & 1) w[i] = part[i];
}
/// The sum of the lanes: halves, then pairs.
inline float sum(Vec a) {
  const __m128 q = _mm_add_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
  const __m128 e = _mm_add_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_add_ss(e, _mm_shuffle_ps(e, e, 1)));
}
#endif

/// The float versions of load_elems and store_elems, for kernels over either element type.
inline Vec load_elems(const float* p, Mask m) { return Vec::load(p, m); }
inline void store_elems(float* p, Mask m, Vec v) { v.store(p, m); }

/// The even and the odd elements of the 2 kLanes elements lo, hi (lo first).
inline void deinterleave(Vec lo, Vec hi, Vec& even, Vec& odd) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
  const __m512i e = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  even = {_mm512_permutex2var_ps(lo.v, e, hi.v)};
  odd = {_mm512_permutex2var_ps(lo.v, _mm512_add_epi32(e, _mm512_set1_epi32(1)), hi.v)};
#else
  // Within 128-bit halves first ([lo0 lo2 hi0 hi2 | lo4 lo6 hi4 hi6]), then the 64-bit
  // quarters into order.
  even = {_mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo.v, hi.v, 0x88)), 0xD8))};
  odd = {_mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo.v, hi.v, 0xDD)), 0xD8))};
#endif
}

/// 2 kLanes consecutive elements gathered by masked loads (`lo` lanes: the first kLanes,
/// `hi`: the rest; lanes loaded again replace earlier ones), then split into their even and
/// odd elements: floats through deinterleave's shuffles.
template <typename T>
struct PairRun {
  Vec lo, hi;
  PairRun() : lo(Vec::zero()), hi(Vec::zero()) {}
  PairRun(Mask lo_lanes, Mask hi_lanes, const T* p)
      : lo(load_elems(p, lo_lanes)), hi(load_elems(p + kLanes, hi_lanes)) {}
  void load(Mask lo_lanes, Mask hi_lanes, const T* p) {
    lo = load_into(lo, lo_lanes, p);
    hi = load_into(hi, hi_lanes, p + kLanes);
  }
  void split(Vec& even, Vec& odd) const { deinterleave(lo, hi, even, odd); }
};

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
/// bfloat16 as 16-bit words, one load for both halves: each 32-bit lane then holds a pair,
/// the even element in its low half and the odd one in its high half, so a shift and a mask
/// widen them, no shuffles (cheaper than widening, then deinterleaving, floats).
template <>
struct PairRun<bfloat16> {
  __m512i words;
  PairRun() : words(_mm512_setzero_si512()) {}
  PairRun(Mask lo_lanes, Mask hi_lanes, const bfloat16* p)
      : words(_mm512_maskz_loadu_epi16(static_cast<__mmask32>(lo_lanes) | (static_cast<__mmask32>(hi_lanes) << kLanes),
                                       p)) {}
  void load(Mask lo_lanes, Mask hi_lanes, const bfloat16* p) {
    const __mmask32 lanes = static_cast<__mmask32>(lo_lanes) | (static_cast<__mmask32>(hi_lanes) << kLanes);
    words = _mm512_mask_loadu_epi16(words, lanes, p);
  }
  void split(Vec& even, Vec& odd) const {
    even = {_mm512_castsi512_ps(_mm512_maskz_slli_epi32(__mmask16(0xFFFF), words, 16))};
    odd = {_mm512_castsi512_ps(_mm512_and_si512(words, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))))};
  }
};
#endif

/// a and b interleaved (a0 b0 a1 b1 ...): the first kLanes elements in lo, the rest in hi.
inline void interleave(Vec a, Vec b, Vec& lo, Vec& hi) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
  const __m512i l = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  lo = {_mm512_permutex2var_ps(a.v, l, b.v)};
  hi = {_mm512_permutex2var_ps(a.v, _mm512_add_epi32(l, _mm512_set1_epi32(8)), b.v)};
#else
  const __m256 x = _mm256_unpacklo_ps(a.v, b.v), y = _mm256_unpackhi_ps(a.v, b.v);
  lo = {_mm256_permute2f128_ps(x, y, 0x20)};
  hi = {_mm256_permute2f128_ps(x, y, 0x31)};
#endif
}

inline Vec operator-(Vec a) { return Vec::zero() - a; }
inline Vec operator+(Vec a, float b) { return a + Vec::set1(b); }
inline Vec operator*(float a, Vec b) { return Vec::set1(a) * b; }

#endif  // TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
