/// \file
/// Dropout masks at one vector level: Philox draws sixteen counters at a time at the
/// AVX-512 level (simd/philox.inl), one at a time elsewhere; the same draws either way.

/// Draw r keeps its unit when r * 2^-32 >= p (the comparison the device kernel makes in
/// double), that is when r >= ceil(p * 2^32): one integer comparison per draw.
inline std::uint64_t keep_threshold(double p) { return static_cast<std::uint64_t>(std::ceil(p * 4294967296.0)); }

/// dropout_mask at this level (backend/cpu/dropout.hpp).
template <typename T>
void dropout_mask(Level, const RandomStream& rs, T* mask, std::int64_t units, double p) {
  const T scale = p < 1.0 ? static_cast<T>(1.0 / (1.0 - p)) : T(0);
  const std::uint64_t threshold = keep_threshold(p);
  // Chunks start at multiples of 4 so that each Philox block (4 draws) is computed once.
  const std::int64_t full = units / 4;
  parallel_for(full, kElementwiseGrain / 4, [&](std::int64_t lo, std::int64_t hi) {
    std::int64_t blk = lo;
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
    if constexpr (sizeof(T) == 4) {
      if (threshold <= 0xFFFFFFFFu) {
        const __m512i thr = _mm512_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(threshold)));
        const __m512 keep = _mm512_set1_ps(scale), drop = _mm512_setzero_ps();
        for (; blk + 16 <= hi; blk += 16) {
          __m512i draws[4], ordered[4];
          philox4x32_x16(rs.key, rs.base + static_cast<std::uint64_t>(blk), draws);
          philox_counter_major(draws, ordered);
          for (int j = 0; j < 4; ++j)
            _mm512_storeu_ps(mask + blk * 4 + 16 * j,
                             _mm512_mask_blend_ps(_mm512_cmpge_epu32_mask(ordered[j], thr), drop, keep));
        }
      }
    }
#endif
    for (; blk < hi; ++blk) {
      std::uint32_t r[4];
      tinynet::detail::Philox4x32::generate(rs.key, rs.base + static_cast<std::uint64_t>(blk), r);
      for (int k = 0; k < 4; ++k) mask[blk * 4 + k] = r[k] >= threshold ? scale : T(0);
    }
  });
  if (full * 4 < units) {
    std::uint32_t r[4];
    tinynet::detail::Philox4x32::generate(rs.key, rs.base + static_cast<std::uint64_t>(full), r);
    for (std::int64_t u = full * 4; u < units; ++u) mask[u] = r[u - full * 4] >= threshold ? scale : T(0);
  }
}
