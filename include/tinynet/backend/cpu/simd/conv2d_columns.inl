/// \file
/// Which of an output row's columns read inside the input (valid_columns), and from the
/// AVX-512 level up stride-2 columns from input rows split once into even and odd elements
/// (ResNet's downsampling of small images): im2col's (simd/conv2d.inl) and col2im's
/// (simd/conv2d_backward.inl).

namespace detail {

/// The output columns x whose input column x*sw - pw + j lies inside [0, w): [x0, x1).
inline void valid_columns(const Conv2dGeometry& g, std::int64_t j, std::int64_t& x0, std::int64_t& x1) {
  x0 = std::min(g.ow, std::max<std::int64_t>(0, (g.pw - j + g.sw - 1) / g.sw));
  x1 = std::max(x0, std::min(g.ow, (g.w + g.pw - j + g.sw - 1) / g.sw));
}

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
/// Stride-2 columns whose input rows fit in two vectors and output rows in one (ResNet's
/// downsampling of small images): each input row is split once into its even and odd
/// elements, of which every tap's row is a shift, instead of a strided copy per tap (whose
/// masks cost more than its data at these lengths). Up to kMaxTaps taps per row.
inline constexpr std::int64_t kMaxTaps = 8;
inline bool stride2_rows(const Conv2dGeometry& g) {
  return g.sw == 2 && g.w <= 2 * kLanes && g.ow <= kLanes && g.kw <= kMaxTaps;
}

/// Tap j of a stride-2 row: output lane x reads input element 2x - pw + j, element x + shift
/// of the row's odd or even elements, for the lanes [x0, x1) inside the input.
struct Stride2Tap {
  bool from_odd = false;
  __m512i forward = _mm512_setzero_si512();  // lane x: x + shift
  __m512i back = _mm512_setzero_si512();     // lane x: x - shift
  Mask valid = 0, valid_back = 0;            // lanes [x0, x1) and [x0 + shift, x1 + shift)
  Stride2Tap() = default;
  Stride2Tap(const Conv2dGeometry& g, std::int64_t j) : from_odd(((j - g.pw) & 1) != 0) {
    const std::int64_t shift = (j - g.pw) >> 1;
    std::int64_t x0 = 0, x1 = 0;
    valid_columns(g, j, x0, x1);
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    forward = _mm512_add_epi32(iota, _mm512_set1_epi32(static_cast<int>(shift)));
    back = _mm512_sub_epi32(iota, _mm512_set1_epi32(static_cast<int>(shift)));
    valid = lanes_between(x0, x1);
    valid_back = lanes_between(x0 + shift, x1 + shift);
  }
  /// Every tap of g's rows.
  static std::array<Stride2Tap, kMaxTaps> all(const Conv2dGeometry& g) {
    std::array<Stride2Tap, kMaxTaps> taps;
    for (std::int64_t j = 0; j < g.kw; ++j) taps[static_cast<std::size_t>(j)] = Stride2Tap(g, j);
    return taps;
  }
  /// The tap's row from the input row's even and odd elements (lane x + shift of one of
  /// them in lane x), zero outside the input.
  Vec gather(Vec even, Vec odd) const {
    return {_mm512_maskz_permutexvar_ps(valid, forward, (from_odd ? odd : even).v)};
  }
  /// The adjoint: lane x of the tap's row v added to lane x + shift of even or odd, each
  /// element added once, as a strided add would.
  void scatter_add(Vec v, Vec& even, Vec& odd) const {
    Vec& to = from_odd ? odd : even;
    to = {_mm512_mask_add_ps(to.v, valid_back, to.v, _mm512_permutexvar_ps(back, v.v))};
  }
};

/// Calls row(input_row, y, rows) for every tap row i of every output row y of every channel
/// of g whose input row lies inside the image (input_row: the row's index among the
/// channels' rows; rows: the channel's columns from tap (i, 0)'s row, ld apart), and
/// skipped(y, rows) for the others: im2col's columns and col2im's adjoint walk the same
/// rows in the same order.
template <typename C, typename Row, typename Skipped>
void for_each_stride2_row(const Conv2dGeometry& g, C* col, std::int64_t ld, Row&& row, Skipped&& skipped) {
  for (std::int64_t ci = 0; ci < g.c; ++ci)
    for (std::int64_t i = 0; i < g.kh; ++i) {
      C* rows = col + (ci * g.kh + i) * g.kw * ld;
      for (std::int64_t y = 0; y < g.oh; ++y) {
        const std::int64_t iy = y * g.sh - g.ph + i;
        if (iy < 0 || iy >= g.h)
          skipped(y, rows);
        else
          row(ci * g.h + iy, y, rows);
      }
    }
}

/// Lanes of an input row in its first and second vector (lo, hi), and of an output row.
struct Stride2Masks {
  Mask lo, hi, out;
  explicit Stride2Masks(const Conv2dGeometry& g)
      : lo(tail_mask(g.w)), hi(lanes_between(0, g.w - kLanes)), out(tail_mask(g.ow)) {}
};

/// im2col for stride2_rows(g).
inline void im2col_stride2(const Conv2dGeometry& g, const float* in, float* col, std::int64_t ld) {
  const Stride2Masks m(g);
  const auto taps = Stride2Tap::all(g);
  for_each_stride2_row(
      g, col, ld,
      [&](std::int64_t input_row, std::int64_t y, float* rows) {
        const float* src = in + input_row * g.w;
        Vec even, odd;
        deinterleave(Vec::load(src, m.lo), Vec::load(src + kLanes, m.hi), even, odd);
        for (std::int64_t j = 0; j < g.kw; ++j)
          taps[static_cast<std::size_t>(j)].gather(even, odd).store(rows + j * ld + y * g.ow, m.out);
      },
      [&](std::int64_t y, float* rows) {
        for (std::int64_t j = 0; j < g.kw; ++j) Vec::zero().store(rows + j * ld + y * g.ow, m.out);
      });
}

/// col2im_add for stride2_rows(g): each input row split the same way, every tap added into
/// it in im2col's order (for an element: tap row i, then tap j), then interleaved back.
inline void col2im_stride2(const Conv2dGeometry& g, const float* col, std::int64_t ld, float* in) {
  const Stride2Masks m(g);
  const auto taps = Stride2Tap::all(g);
  for_each_stride2_row(
      g, col, ld,
      [&](std::int64_t input_row, std::int64_t y, const float* rows) {
        float* dst = in + input_row * g.w;
        Vec even, odd;
        deinterleave(Vec::load(dst, m.lo), Vec::load(dst + kLanes, m.hi), even, odd);
        for (std::int64_t j = 0; j < g.kw; ++j)
          taps[static_cast<std::size_t>(j)].scatter_add(Vec::load(rows + j * ld + y * g.ow, m.out), even, odd);
        Vec first, second;
        interleave(even, odd, first, second);
        first.store(dst, m.lo);
        second.store(dst + kLanes, m.hi);
      },
      [](std::int64_t, const float*) {});
}
#endif

}  // namespace detail
