#pragma once
/// \file
/// Copy, add and zero short contiguous runs of floats (a convolution's rows are often 10-30
/// elements). Library calls (memmove, memset) and generic vector loops spend more on setup
/// and tails than on the data at these lengths; with AVX-512 a run is a few masked
/// full-width moves.

#include <cstdint>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace tinynet::backend::cpu {

#if defined(__AVX512F__)
namespace detail {
inline __mmask16 tail_mask(std::int64_t left) {
  return left >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << left) - 1u);
}
}  // namespace detail
#endif

/// dst[0, n) = src[0, n)
template <typename T>
inline void copy_run(T* dst, const T* src, std::int64_t n) {
#if defined(__AVX512F__)
  if constexpr (sizeof(T) == 4) {
    for (std::int64_t x = 0; x < n; x += 16) {
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
#if defined(__AVX512F__)
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

/// dst[0, n) = src[0, n) + value
template <typename T>
inline void copy_plus_run(T* dst, const T* src, T value, std::int64_t n) {
#if defined(__AVX512F__)
  if constexpr (sizeof(T) == 4) {
    const __m512 v = _mm512_set1_ps(value);
    for (std::int64_t x = 0; x < n; x += 16) {
      const __mmask16 m = detail::tail_mask(n - x);
      _mm512_mask_storeu_ps(dst + x, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, src + x), v));
    }
    return;
  }
#endif
  for (std::int64_t x = 0; x < n; ++x) dst[x] = src[x] + value;
}

/// dst[0, n) = value
template <typename T>
inline void fill_run(T* dst, T value, std::int64_t n) {
#if defined(__AVX512F__)
  if constexpr (sizeof(T) == 4) {
    const __m512 v = _mm512_set1_ps(value);
    for (std::int64_t x = 0; x < n; x += 16) _mm512_mask_storeu_ps(dst + x, detail::tail_mask(n - x), v);
    return;
  }
#endif
  for (std::int64_t x = 0; x < n; ++x) dst[x] = value;
}

}  // namespace tinynet::backend::cpu
