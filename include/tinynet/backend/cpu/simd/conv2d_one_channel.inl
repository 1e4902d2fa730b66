/// \file
/// Direct convolution for layers with one input channel (the first layer on grayscale
/// images), float32 at the AVX2 and AVX-512 levels: the output without im2col. As a GEMM
/// such a layer has an inner dimension of only kh*kw (9 or 25), and its column matrix is
/// kh*kw times the image; here each output row is kh*kw multiply-adds of shifted input
/// rows, two vectors of outputs at a time, 8 filters a pass (6 with AVX2's sixteen
/// registers). (A direct weight gradient was measured no faster than im2col + GEMM:
/// bench/NOTES.md.)

namespace one_channel {

using cpu::one_channel::Shape;

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2

namespace detail {

using TINYNET_ISA_NAMESPACE::detail::lanes_between;

/// Filters per pass: two accumulators each, with room left for the loads.
constexpr int kFilterBlock = TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512 ? 8 : 6;

/// For output columns x0 .. x0 + 2 kLanes - 1 (two vectors) and each kernel column j: the
/// lanes whose output lies in [0, ow) and whose input column x0 + l + j - pw lies in [0, w).
struct ColumnMasks {
  Mask out[2], in[5][2];

  ColumnMasks(const Shape& s, std::int64_t x0) {
    out[0] = lanes_between(0, s.ow - x0);
    out[1] = lanes_between(0, s.ow - x0 - kLanes);
    for (std::int64_t j = 0; j < s.kw; ++j) {
      const std::int64_t col0 = x0 + j - s.pw;
      in[j][0] = lanes_between(std::max<std::int64_t>(0, -col0), std::min(s.ow - x0, s.w - col0));
      in[j][1] = lanes_between(std::max<std::int64_t>(0, -col0 - kLanes), std::min(s.ow - x0, s.w - col0) - kLanes);
    }
  }
};

/// Output rows of KB consecutive filters (from k0) for one image, two vectors of columns at
/// a time. Y: float, or bfloat16 (autocast's activations, rounded as stored).
template <int KB, typename Y>
void forward_block(const Shape& s, const float* x, const float* wt, const float* b, bool relu, Y* y, std::int64_t k0) {
  const std::int64_t taps = s.kh * s.kw, plane = s.oh * s.ow;
  for (std::int64_t x0 = 0; x0 < s.ow; x0 += 2 * kLanes) {
    const ColumnMasks mask(s, x0);
    for (std::int64_t oy = 0; oy < s.oh; ++oy) {
      Vec acc[KB][2];
#pragma GCC unroll 16
      for (int r = 0; r < KB; ++r) acc[r][0] = acc[r][1] = Vec::set1(b != nullptr ? b[k0 + r] : 0.0f);
      for (std::int64_t i = 0; i < s.kh; ++i) {
        const std::int64_t iy = oy + i - s.ph;
        if (iy < 0 || iy >= s.h) continue;
        const float* row = x + iy * s.w + x0 - s.pw;
        for (std::int64_t j = 0; j < s.kw; ++j) {
          const Vec v0 = Vec::load(row + j, mask.in[j][0]), v1 = Vec::load(row + j + kLanes, mask.in[j][1]);
          const float* tap = wt + k0 * taps + i * s.kw + j;
#pragma GCC unroll 16
          for (int r = 0; r < KB; ++r) {
            const Vec c = Vec::set1(tap[r * taps]);
            acc[r][0] = fmadd(c, v0, acc[r][0]);
            acc[r][1] = fmadd(c, v1, acc[r][1]);
          }
        }
      }
#pragma GCC unroll 16
      for (int r = 0; r < KB; ++r) {
        Y* out = y + (k0 + r) * plane + oy * s.ow + x0;
        for (int v = 0; v < 2; ++v)
          store_elems(out + kLanes * v, mask.out[v], relu ? TINYNET_ISA_NAMESPACE::relu(acc[r][v]) : acc[r][v]);
      }
    }
  }
}

/// The last `filters` (< KB) filters.
template <int KB, typename Y>
void forward_rest(std::int64_t filters, const Shape& s, const float* x, const float* wt, const float* b, bool relu,
                  Y* y, std::int64_t k0) {
  if constexpr (KB > 0) {
    if (filters == KB) return forward_block<KB>(s, x, wt, b, relu, y, k0);
    forward_rest<KB - 1>(filters, s, x, wt, b, relu, y, k0);
  }
}

}  // namespace detail

/// y[o] = b[o] + the filter w[o] ([out_c, kh, kw]) slid over the plane x ([h, w]); then
/// max(., 0) with `relu`. y: [out_c, oh, ow] of one image, float or (at the AVX-512 level)
/// bfloat16.
template <typename Y>
void forward(const Shape& s, const float* x, const float* w, const float* b, bool relu, Y* y) {
  std::int64_t k = 0;
  for (; k + detail::kFilterBlock <= s.out_c; k += detail::kFilterBlock)
    detail::forward_block<detail::kFilterBlock>(s, x, w, b, relu, y, k);
  detail::forward_rest<detail::kFilterBlock - 1>(s.out_c - k, s, x, w, b, relu, y, k);
}

#endif  // TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2

}  // namespace one_channel
