/// \file
/// Dropout masks at one vector level: Philox draws a vector of counters at a time at the
/// AVX2 and AVX-512 levels (simd/philox.inl), one at a time elsewhere; the same draws
/// either way.

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
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
    if constexpr (sizeof(T) == 4) {
      if (threshold <= 0xFFFFFFFFu) {
        const detail::U32 thr = detail::u32_set1(static_cast<std::uint32_t>(threshold));
        const Vec keep = Vec::set1(scale), drop = Vec::zero();
        for (; blk + kLanes <= hi; blk += kLanes) {
          detail::U32 draws[4], ordered[4];
          philox4x32_lanes(rs.key, rs.base + static_cast<std::uint64_t>(blk), draws);
          philox_counter_major(draws, ordered);
          for (int j = 0; j < 4; ++j)
            detail::u32_select_ge(ordered[j], thr, keep, drop).store(mask + blk * 4 + kLanes * j);
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

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
/// apply_mask (backend/cpu/dropout.hpp) for bfloat16 activations, one mask value per
/// element: x widened as loaded, the product (and the sum, with `accumulate`) in float,
/// rounded once as stored. The product is the masked form, which the compiler does not
/// fuse with the sum (the scalar loop rounds it first).
template <typename T>
void apply_mask(Level, const T* x, const float* mask, T* y, std::int64_t n, bool accumulate) {
  parallel_for(n, kElementwiseGrain, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; i += kLanes) {
      const Mask m = detail::tail_mask(hi - i);
      const Vec v{_mm512_maskz_mul_ps(__mmask16(0xFFFF), load_elems(x + i, m).v, Vec::load(mask + i, m).v)};
      store_elems(y + i, m, accumulate ? load_elems(y + i, m) + v : v);
    }
  });
}
#endif
