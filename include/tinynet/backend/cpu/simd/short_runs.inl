/// \file
/// Copy, add and zero short contiguous runs of floats (a convolution's rows are often 10-30
/// elements). Library calls (memmove, memset) and generic vector loops spend more on setup
/// and tails than on the data at these lengths; with vectors (Vec, vec.inl) a run is a
/// few full-width moves and one masked move for its tail.

/// Whether float runs take the vector loops at this level.
template <typename T>
inline constexpr bool kVectorRuns = std::is_same_v<T, float>&& TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2;

/// dst[0, n) = src[0, n)
template <typename T>
inline void copy_run(T* dst, const T* src, std::int64_t n) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
  if constexpr (kVectorRuns<T>) {
    // Full-width moves first, a masked one only for the last few elements.
    std::int64_t x = 0;
    for (; x + kLanes <= n; x += kLanes) Vec::load(src + x).store(dst + x);
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
    if (x + 8 <= n) {
      _mm256_storeu_ps(dst + x, _mm256_loadu_ps(src + x));
      x += 8;
    }
#endif
    if (x < n) {
      const Mask m = detail::tail_mask(n - x);
      Vec::load(src + x, m).store(dst + x, m);
    }
    return;
  }
#endif
  for (std::int64_t x = 0; x < n; ++x) dst[x] = src[x];
}

/// dst[0, n) += src[0, n)
template <typename T>
inline void add_run(T* dst, const T* src, std::int64_t n) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
  if constexpr (kVectorRuns<T>) {
    for (std::int64_t x = 0; x < n; x += kLanes) {
      const Mask m = detail::tail_mask(n - x);
      (Vec::load(dst + x, m) + Vec::load(src + x, m)).store(dst + x, m);
    }
    return;
  }
#endif
  for (std::int64_t x = 0; x < n; ++x) dst[x] += src[x];
}

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
namespace detail {
/// The elements from p that kLanes of a run of stride 2 touch (2 kLanes - 1, or 2 left - 1
/// where fewer are left: the last one even), as the masks of their two vectors.
struct Stride2Lanes {
  Mask lo, hi;
  explicit Stride2Lanes(std::int64_t left)
      : lo(tail_mask(std::min<std::int64_t>(2 * left - 1, 2 * kLanes - 1))),
        hi(tail_mask(std::min<std::int64_t>(2 * left - 1, 2 * kLanes - 1) - kLanes)) {}
};
}  // namespace detail
#endif

/// dst[0, n) = src[0], src[stride], src[2 stride], ...: a strided convolution's columns.
/// Stride 2 (ResNet's downsampling) moves whole vectors with AVX-512, the even elements
/// picked out (AVX2's masked moves cost more than the elements one by one).
template <typename T>
inline void copy_strided_run(T* dst, const T* src, std::int64_t stride, std::int64_t n) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
  if constexpr (kVectorRuns<T>) {
    if (stride == 2) {
      for (std::int64_t x = 0; x < n; x += kLanes) {
        const detail::Stride2Lanes m(n - x);
        Vec even, odd;
        deinterleave(Vec::load(src + 2 * x, m.lo), Vec::load(src + 2 * x + kLanes, m.hi), even, odd);
        even.store(dst + x, detail::tail_mask(n - x));
      }
      return;
    }
  }
#endif
  for (std::int64_t x = 0; x < n; ++x) dst[x] = src[x * stride];
}

/// dst[0], dst[stride], dst[2 stride], ... += src[0, n): col2im's adjoint of copy_strided_run,
/// each element added once, as the plain loop adds it.
template <typename T>
inline void add_strided_run(T* dst, const T* src, std::int64_t stride, std::int64_t n) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
  if constexpr (kVectorRuns<T>) {
    if (stride == 2) {
      for (std::int64_t x = 0; x < n; x += kLanes) {
        const detail::Stride2Lanes m(n - x);
        Vec even, odd;
        deinterleave(Vec::load(dst + 2 * x, m.lo), Vec::load(dst + 2 * x + kLanes, m.hi), even, odd);
        Vec first, second;
        interleave(even + Vec::load(src + x, detail::tail_mask(n - x)), odd, first, second);
        first.store(dst + 2 * x, m.lo);
        second.store(dst + 2 * x + kLanes, m.hi);
      }
      return;
    }
  }
#endif
  for (std::int64_t x = 0; x < n; ++x) dst[x * stride] += src[x];
}

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
namespace detail {
/// pack_rows for rows of kLanes / K floats: K rows per store, one masked load each.
template <int K>
inline void pack_rows_by(float* dst, const float* src, std::int64_t src_stride, std::int64_t rows) {
  constexpr int n = kLanes / K;
  std::int64_t r = 0;
  for (; r + K <= rows; r += K) {
    Vec v = Vec::load(src + r * src_stride, lanes_between(0, n));
#pragma GCC unroll 16
    for (int s = 1; s < K; ++s) v = load_into(v, lanes_between(s * n, (s + 1) * n), src + (r + s) * src_stride - s * n);
    v.store(dst + r * n);
  }
  for (; r < rows; ++r) copy_run(dst + r * n, src + r * src_stride, n);
}
}  // namespace detail
#endif

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
namespace detail {
/// Words [lo, hi) of a vector of 32 16-bit words, clipped to [0, 32).
inline __mmask32 words_between(std::int64_t lo, std::int64_t hi) {
  lo = std::max<std::int64_t>(lo, 0);
  hi = std::min<std::int64_t>(hi, 32);
  if (hi <= lo) return 0;
  return static_cast<__mmask32>((hi == 32 ? ~0u : (1u << hi) - 1u) & ~((1u << lo) - 1u));
}

/// pack_words for rows of 32 / K words: K rows per store, one masked load each.
template <int K>
inline void pack_words_by(std::uint16_t* dst, const std::uint16_t* src, std::int64_t src_stride, std::int64_t rows) {
  constexpr int n = 32 / K;
  std::int64_t r = 0;
  for (; r + K <= rows; r += K) {
    __m512i v = _mm512_maskz_loadu_epi16(words_between(0, n), src + r * src_stride);
#pragma GCC unroll 16
    for (int s = 1; s < K; ++s)
      v = _mm512_mask_loadu_epi16(v, words_between(s * n, (s + 1) * n), src + (r + s) * src_stride - s * n);
    _mm512_storeu_si512(dst + r * n, v);
  }
  for (; r < rows; ++r)
    _mm512_mask_storeu_epi16(dst + r * n, words_between(0, n),
                             _mm512_maskz_loadu_epi16(words_between(0, n), src + r * src_stride));
}

/// pack_rows over 16-bit words (bfloat16 columns): 32 / n rows to a store where n divides
/// 32, else a row (up to 32 words) per masked move.
inline void pack_words(std::uint16_t* dst, const std::uint16_t* src, std::int64_t src_stride, std::int64_t rows,
                       std::int64_t n) {
  switch (n) {
    case 2:
      return detail::pack_words_by<16>(dst, src, src_stride, rows);
    case 4:
      return detail::pack_words_by<8>(dst, src, src_stride, rows);
    case 8:
      return detail::pack_words_by<4>(dst, src, src_stride, rows);
    case 16:
      return detail::pack_words_by<2>(dst, src, src_stride, rows);
    default:
      break;
  }
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t x = 0; x < n; x += 32) {
      const __mmask32 m = words_between(0, n - x);
      _mm512_mask_storeu_epi16(dst + r * n + x, m, _mm512_maskz_loadu_epi16(m, src + r * src_stride + x));
    }
}
}  // namespace detail
#endif

/// dst[r*n + x] = src[r*src_stride + x] for r < rows, x < n: rows gathered into one
/// contiguous run (im2col's rows). Rows of a half, quarter, ... of a vector share stores,
/// one masked load per row, instead of a short store each; likewise for 16-bit words
/// (bfloat16) at the AVX-512 level.
template <typename T>
inline void pack_rows(T* dst, const T* src, std::int64_t src_stride, std::int64_t rows, std::int64_t n) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
  if constexpr (std::is_same_v<T, std::uint16_t>) return detail::pack_words(dst, src, src_stride, rows, n);
#endif
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
  if constexpr (kVectorRuns<T>) {
    switch (n) {
      case 1:
        return detail::pack_rows_by<kLanes>(dst, src, src_stride, rows);
      case 2:
        return detail::pack_rows_by<kLanes / 2>(dst, src, src_stride, rows);
      case 4:
        return detail::pack_rows_by<kLanes / 4>(dst, src, src_stride, rows);
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
      case 8:
        return detail::pack_rows_by<2>(dst, src, src_stride, rows);
#endif
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
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
  if constexpr (kVectorRuns<T>) {
    const Vec v = Vec::set1(value);
    for (std::int64_t x = 0; x < n; x += kLanes) {
      const Mask m = detail::tail_mask(n - x);
      const Vec r = Vec::load(src + x, m) + v;
      (relu ? TINYNET_ISA_NAMESPACE::relu(r) : r).store(dst + x, m);
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
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
  if constexpr (kVectorRuns<T>) {
    for (std::int64_t x = 0; x < n; x += kLanes) {
      const Mask m = detail::tail_mask(n - x);
      where_positive(Vec::load(y + x, m), Vec::load(src + x, m)).store(dst + x, m);
    }
    return;
  }
#endif
  for (std::int64_t x = 0; x < n; ++x) dst[x] = y[x] > T(0) ? src[x] : T(0);
}

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
// The runs between bfloat16 activations (autocast) and float columns: read widened, written
// rounded (vec.inl's load_elems and store_elems).
inline void copy_run(float* dst, const bfloat16* src, std::int64_t n) {
  for (std::int64_t x = 0; x < n; x += kLanes) {
    const Mask m = detail::tail_mask(n - x);
    load_elems(src + x, m).store(dst + x, m);
  }
}
/// dst[0, n) = src rounded to bfloat16 (dst + src with `accumulate`, summed in float).
inline void copy_run(bfloat16* dst, const float* src, std::int64_t n, bool accumulate = false) {
  for (std::int64_t x = 0; x < n; x += kLanes) {
    const Mask m = detail::tail_mask(n - x);
    const Vec v = Vec::load(src + x, m);
    store_elems(dst + x, m, accumulate ? load_elems(dst + x, m) + v : v);
  }
}
inline void relu_grad_run(float* dst, const bfloat16* src, const bfloat16* y, std::int64_t n) {
  for (std::int64_t x = 0; x < n; x += kLanes) {
    const Mask m = detail::tail_mask(n - x);
    where_positive(load_elems(y + x, m), load_elems(src + x, m)).store(dst + x, m);
  }
}
inline void copy_plus_run(bfloat16* dst, const float* src, float value, std::int64_t n, bool relu = false) {
  const Vec v = Vec::set1(value);
  for (std::int64_t x = 0; x < n; x += kLanes) {
    const Mask m = detail::tail_mask(n - x);
    const Vec r = Vec::load(src + x, m) + v;
    store_elems(dst + x, m, relu ? TINYNET_ISA_NAMESPACE::relu(r) : r);
  }
}
#else
// The same runs element by element at the baseline level, with the same roundings; the
// plain copies are autocast's conversions (core/detail/convert.hpp: at the CPU's best
// vector level whatever TINYNET_CPU_ISA says, the same bits).
inline void copy_run(float* dst, const bfloat16* src, std::int64_t n) {
  tinynet::detail::bf16_to_float_run(src, dst, n);
}
inline void copy_run(bfloat16* dst, const float* src, std::int64_t n, bool accumulate = false) {
  if (!accumulate) return tinynet::detail::float_to_bf16_run(src, dst, n);
  for (std::int64_t x = 0; x < n; ++x) dst[x] = bfloat16(static_cast<float>(dst[x]) + src[x]);
}
inline void relu_grad_run(float* dst, const bfloat16* src, const bfloat16* y, std::int64_t n) {
  for (std::int64_t x = 0; x < n; ++x) dst[x] = static_cast<float>(y[x]) > 0.0f ? static_cast<float>(src[x]) : 0.0f;
}
inline void copy_plus_run(bfloat16* dst, const float* src, float value, std::int64_t n, bool relu = false) {
  for (std::int64_t x = 0; x < n; ++x) {
    const float r = src[x] + value;
    dst[x] = bfloat16(relu && r <= 0.0f ? 0.0f : r);
  }
}
#endif

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
/// dst[0, n) = y > 0 ? src : 0 (src without y) in bfloat16 as it is; returns the values'
/// sums lane by lane. 32 elements at a time as 16-bit words, nothing widened or rounded but
/// for the sums: y > 0 is its bits read as a signed integer in (0, 0x7F80] (NaN fails, as
/// it fails the float comparison), and each 32-bit lane holds a pair of values, its low and
/// high half.
inline Vec relu_grad_run_sums(bfloat16* dst, const bfloat16* src, const bfloat16* y, std::int64_t n) {
  const __m512i zero = _mm512_setzero_si512(), inf = _mm512_set1_epi16(0x7F80);
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
  auto* const d = reinterpret_cast<std::uint16_t*>(dst);
  const auto* const s = reinterpret_cast<const std::uint16_t*>(src);
  const auto* const ys = reinterpret_cast<const std::uint16_t*>(y);
  Vec acc = Vec::zero();
  for (std::int64_t x = 0; x < n; x += 2 * kLanes) {
    const std::int64_t left = std::min<std::int64_t>(n - x, 2 * kLanes);
    const __mmask32 m = left == 2 * kLanes ? ~__mmask32{0} : (__mmask32{1} << left) - 1;
    __m512i g = _mm512_maskz_loadu_epi16(m, s + x);
    if (y != nullptr) {
      const __m512i yv = _mm512_maskz_loadu_epi16(m, ys + x);
      g = _mm512_maskz_mov_epi16(_mm512_mask_cmpgt_epi16_mask(_mm512_cmple_epi16_mask(yv, inf), yv, zero), g);
    }
    _mm512_mask_storeu_epi16(d + x, m, g);
    acc = acc + Vec{_mm512_castsi512_ps(_mm512_maskz_slli_epi32(__mmask16(0xFFFF), g, 16))} +
          Vec{_mm512_castsi512_ps(_mm512_and_si512(g, high))};
  }
  return acc;
}
#endif

/// Sum of src[0, n), accumulated in the lanes of a vector or in sequence: a fixed order
/// for a level, so results do not depend on alignment or threads.
template <typename T>
inline T sum_run(const T* src, std::int64_t n) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
  if constexpr (kVectorRuns<T>) {
    Vec acc = Vec::zero();
    for (std::int64_t x = 0; x < n; x += kLanes) acc = acc + Vec::load(src + x, detail::tail_mask(n - x));
    return sum(acc);
  }
#endif
  T acc = 0;
  for (std::int64_t x = 0; x < n; ++x) acc += src[x];
  return acc;
}

/// dst[0, n) = value
template <typename T>
inline void fill_run(T* dst, T value, std::int64_t n) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
  if constexpr (kVectorRuns<T>) {
    const Vec v = Vec::set1(value);
    for (std::int64_t x = 0; x < n; x += kLanes) v.store(dst + x, detail::tail_mask(n - x));
    return;
  }
#endif
  for (std::int64_t x = 0; x < n; ++x) dst[x] = value;
}
