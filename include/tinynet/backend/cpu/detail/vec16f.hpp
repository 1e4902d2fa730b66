#pragma once
/// \file
/// Vec16f: sixteen floats in an AVX-512 register, with the arithmetic the optimizer rules
/// use (+ - * /, sqrt), so that one rule written over a value type V runs per element
/// (V = float, on the CPU or a GPU) and sixteen elements at a time here. Compilers do not
/// vectorise the scalar rule themselves: std::sqrt may set errno.

#include "tinynet/core/config.hpp"

#if defined(TINYNET_CPU_AVX512)

#include <immintrin.h>

#include <cstdint>

namespace tinynet::backend::cpu {

struct Vec16f {
  __m512 v;

  static Vec16f load(const float* p, __mmask16 m) { return {_mm512_maskz_loadu_ps(m, p)}; }
  void store(float* p, __mmask16 m) const { _mm512_mask_storeu_ps(p, m, v); }
};

inline Vec16f operator+(Vec16f a, Vec16f b) { return {_mm512_add_ps(a.v, b.v)}; }
inline Vec16f operator-(Vec16f a, Vec16f b) { return {_mm512_sub_ps(a.v, b.v)}; }
inline Vec16f operator*(Vec16f a, Vec16f b) { return {_mm512_mul_ps(a.v, b.v)}; }
inline Vec16f operator/(Vec16f a, Vec16f b) { return {_mm512_div_ps(a.v, b.v)}; }
inline Vec16f operator-(Vec16f a) { return {_mm512_sub_ps(_mm512_setzero_ps(), a.v)}; }
inline Vec16f operator+(Vec16f a, float b) { return a + Vec16f{_mm512_set1_ps(b)}; }
inline Vec16f operator*(float a, Vec16f b) { return Vec16f{_mm512_set1_ps(a)} * b; }
inline Vec16f sqrt(Vec16f a) { return {_mm512_sqrt_ps(a.v)}; }

/// Lanes [0, min(16, left)) of a run.
inline __mmask16 lanes(std::int64_t left) {
  return left >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << left) - 1u);
}

}  // namespace tinynet::backend::cpu

#endif  // TINYNET_CPU_AVX512
