/// \file
/// max_pool2d's forward at one vector level: 2x2 stride-2 windows take a vector kernel at
/// the AVX-512 level, every other shape the scalar loop (backend/cpu/pool2d.hpp).

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
namespace detail {
/// One plane of a 2x2, stride-2, unpadded max-pool, 16 outputs at a time: even and odd
/// input columns split with one permute per row, then the window's four values compared
/// in the scalar loop's order with its test (!(v <= best)), so ties and NaNs resolve alike.
inline void max_pool_2x2_plane(const float* in, float* out, std::int32_t* arg, std::int64_t w, std::int64_t oh,
                               std::int64_t ow) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  const __m512i one = _mm512_set1_epi32(1), down = _mm512_set1_epi32(static_cast<int>(w));
  for (std::int64_t oy = 0; oy < oh; ++oy) {
    const float* r0 = in + 2 * oy * w;
    const float* r1 = r0 + w;
    for (std::int64_t ox = 0; ox < ow; ox += 16) {
      const std::int64_t n = 2 * std::min<std::int64_t>(16, ow - ox);
      const __mmask16 lo = tail_mask(n), hi = n > 16 ? tail_mask(n - 16) : __mmask16(0);
      const __m512 a_lo = _mm512_maskz_loadu_ps(lo, r0 + 2 * ox), a_hi = _mm512_maskz_loadu_ps(hi, r0 + 2 * ox + 16);
      const __m512 b_lo = _mm512_maskz_loadu_ps(lo, r1 + 2 * ox), b_hi = _mm512_maskz_loadu_ps(hi, r1 + 2 * ox + 16);
      const __m512 v[4] = {_mm512_permutex2var_ps(a_lo, even, a_hi), _mm512_permutex2var_ps(a_lo, odd, a_hi),
                           _mm512_permutex2var_ps(b_lo, even, b_hi), _mm512_permutex2var_ps(b_lo, odd, b_hi)};
      const __m512i i00 = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(2 * oy * w + 2 * ox)), even);
      const __m512i idx[4] = {i00, _mm512_add_epi32(i00, one), _mm512_add_epi32(i00, down),
                              _mm512_add_epi32(_mm512_add_epi32(i00, down), one)};
      __m512 best = v[0];
      __m512i best_i = idx[0];
      for (int k = 1; k < 4; ++k) {
        const __mmask16 m = _mm512_cmp_ps_mask(v[k], best, _CMP_NLE_UQ);
        best = _mm512_mask_mov_ps(best, m, v[k]);
        best_i = _mm512_mask_mov_epi32(best_i, m, idx[k]);
      }
      const __mmask16 store = tail_mask(n / 2);
      _mm512_mask_storeu_ps(out + oy * ow + ox, store, best);
      _mm512_mask_storeu_epi32(arg + oy * ow + ox, store, best_i);
    }
  }
}
}  // namespace detail
#endif

/// max_pool2d_forward at this level.
template <typename T>
void max_pool2d_forward(Level, const Pool2dGeometry& g, const T* x, T* y, std::int32_t* idx) {
  parallel_for(g.planes, 1, [&](std::int64_t lo, std::int64_t hi) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
    if constexpr (sizeof(T) == 4) {
      if (g.k == 2 && g.s == 2 && g.p == 0) {
        for (std::int64_t pl = lo; pl < hi; ++pl)
          detail::max_pool_2x2_plane(x + pl * g.h * g.w, y + pl * g.oh * g.ow, idx + pl * g.oh * g.ow, g.w, g.oh, g.ow);
        return;
      }
    }
#endif
    for (std::int64_t pl = lo; pl < hi; ++pl) {
      const T* in = x + pl * g.h * g.w;
      T* out = y + pl * g.oh * g.ow;
      std::int32_t* arg = idx + pl * g.oh * g.ow;
      for (std::int64_t oy = 0; oy < g.oh; ++oy)
        for (std::int64_t ox = 0; ox < g.ow; ++ox) {
          const std::int64_t y0 = oy * g.s - g.p, x0 = ox * g.s - g.p;
          const std::int64_t i0 = std::max<std::int64_t>(y0, 0), i1 = std::min(y0 + g.k, g.h);
          const std::int64_t j0 = std::max<std::int64_t>(x0, 0), j1 = std::min(x0 + g.k, g.w);
          std::int64_t best_i = i0 * g.w + j0;
          T best = in[best_i];
          for (std::int64_t i = i0; i < i1; ++i)
            for (std::int64_t j = j0; j < j1; ++j) {
              const T v = in[i * g.w + j];
              if (!(v <= best)) {  // also true for NaN, which propagates as in PyTorch
                best = v;
                best_i = i * g.w + j;
              }
            }
          out[oy * g.ow + ox] = best;
          arg[oy * g.ow + ox] = static_cast<std::int32_t>(best_i);
        }
    }
  });
}
