/// \file
/// max_pool2d's forward at one vector level: 2x2 stride-2 windows take a vector kernel at
/// the AVX2 and AVX-512 levels (bfloat16 at AVX-512's), every other shape the scalar loop
/// (backend/cpu/pool2d.hpp).

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
namespace detail {

// 32-bit indices and the comparison that picks a window's maximum, at this width.
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
using I32 = __m512i;
using Pick = __mmask16;
inline I32 i32_set1(std::int64_t x) { return _mm512_set1_epi32(static_cast<int>(x)); }
inline I32 i32_add(I32 a, I32 b) { return _mm512_add_epi32(a, b); }
inline I32 i32_even() { return _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30); }
/// Lanes where !(v <= best): also where v is NaN.
inline Pick not_le(Vec v, Vec best) { return _mm512_cmp_ps_mask(v.v, best.v, _CMP_NLE_UQ); }
inline Vec pick(Pick m, Vec a, Vec b) { return {_mm512_mask_mov_ps(b.v, m, a.v)}; }
inline I32 pick(Pick m, I32 a, I32 b) { return _mm512_mask_mov_epi32(b, m, a); }
inline void i32_store(std::int32_t* p, Mask m, I32 v) { _mm512_mask_storeu_epi32(p, m, v); }
#else
using I32 = __m256i;
using Pick = __m256;
inline I32 i32_set1(std::int64_t x) { return _mm256_set1_epi32(static_cast<int>(x)); }
inline I32 i32_add(I32 a, I32 b) { return _mm256_add_epi32(a, b); }
inline I32 i32_even() { return _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14); }
inline Pick not_le(Vec v, Vec best) { return _mm256_cmp_ps(v.v, best.v, _CMP_NLE_UQ); }
inline Vec pick(Pick m, Vec a, Vec b) { return {_mm256_blendv_ps(b.v, a.v, m)}; }
inline I32 pick(Pick m, I32 a, I32 b) {
  return _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(b), _mm256_castsi256_ps(a), m));
}
inline void i32_store(std::int32_t* p, Mask m, I32 v) { _mm256_maskstore_epi32(p, m, v); }
#endif

/// Whether max_pool_2x2_plane takes elements of type T at this level.
template <typename T>
inline constexpr bool kVectorPool = std::is_same_v<T, float> ||
                                    (std::is_same_v<T, bfloat16> && TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512);

/// One plane of a 2x2, stride-2, unpadded max-pool, a vector of outputs at a time: even
/// and odd input columns split by deinterleaving each row, then the window's four values
/// compared in the scalar loop's order with its test (!(v <= best)), so ties and NaNs
/// resolve alike.
template <typename T>
void max_pool_2x2_plane(const T* in, T* out, std::int32_t* arg, std::int64_t w, std::int64_t oh, std::int64_t ow) {
  const I32 even = i32_even(), one = i32_set1(1), down = i32_set1(w);
  for (std::int64_t oy = 0; oy < oh; ++oy) {
    const T* r0 = in + 2 * oy * w;
    const T* r1 = r0 + w;
    for (std::int64_t ox = 0; ox < ow; ox += kLanes) {
      const std::int64_t n = 2 * std::min<std::int64_t>(kLanes, ow - ox);
      const Mask lo = tail_mask(n), hi = lanes_between(0, n - kLanes);
      Vec v[4];
      deinterleave(load_elems(r0 + 2 * ox, lo), load_elems(r0 + 2 * ox + kLanes, hi), v[0], v[1]);
      deinterleave(load_elems(r1 + 2 * ox, lo), load_elems(r1 + 2 * ox + kLanes, hi), v[2], v[3]);
      const I32 i00 = i32_add(i32_set1(2 * oy * w + 2 * ox), even);
      const I32 idx[4] = {i00, i32_add(i00, one), i32_add(i00, down), i32_add(i32_add(i00, down), one)};
      Vec best = v[0];
      I32 best_i = idx[0];
      for (int k = 1; k < 4; ++k) {
        const Pick m = not_le(v[k], best);
        best = pick(m, v[k], best);
        best_i = pick(m, idx[k], best_i);
      }
      const Mask store = tail_mask(n / 2);
      store_elems(out + oy * ow + ox, store, best);
      i32_store(arg + oy * ow + ox, store, best_i);
    }
  }
}

}  // namespace detail
#endif

/// max_pool2d_forward at this level.
template <typename T>
void max_pool2d_forward(Level, const Pool2dGeometry& g, const T* x, T* y, std::int32_t* idx) {
  parallel_for(g.planes, 1, [&](std::int64_t lo, std::int64_t hi) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
    if constexpr (detail::kVectorPool<T>) {
      if (g.k == 2 && g.s == 2 && g.p == 0) {
        for (std::int64_t pl = lo; pl < hi; ++pl)
          detail::max_pool_2x2_plane(x + pl * g.h * g.w, y + pl * g.oh * g.ow, idx + pl * g.oh * g.ow, g.w, g.oh, g.ow);
        return;
      }
    }
#endif
    using C = compute_t<T>;  // bfloat16 compared as float; the maximum is stored exactly
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
          C best = static_cast<C>(in[best_i]);
          for (std::int64_t i = i0; i < i1; ++i)
            for (std::int64_t j = j0; j < j1; ++j) {
              const C v = static_cast<C>(in[i * g.w + j]);
              if (!(v <= best)) {  // also true for NaN, which propagates as in PyTorch
                best = v;
                best_i = i * g.w + j;
              }
            }
          out[oy * g.ow + ox] = in[best_i];
          arg[oy * g.ow + ox] = static_cast<std::int32_t>(best_i);
        }
    }
  });
}
