/// \file
/// Direct convolution for layers with one input channel (the first layer on grayscale
/// images), float32 with AVX-512: the output without im2col. As a GEMM such a layer has an
/// inner dimension of only kh*kw (9 or 25), and its column matrix is kh*kw times the image;
/// here each output row is kh*kw multiply-adds of shifted input rows, 16 outputs per
/// vector, 8 filters at a time. (A direct weight gradient was measured no faster than
/// im2col + GEMM: bench/NOTES.md.)

namespace one_channel {

using cpu::one_channel::Shape;

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512

namespace detail {

using TINYNET_ISA_NAMESPACE::detail::lanes_between;

/// For output columns x0 .. x0+31 (two vectors) and each kernel column j: the lanes whose
/// output lies in [0, ow) and whose input column x0 + l + j - pw lies in [0, w).
struct ColumnMasks {
  __mmask16 out[2], in[5][2];

  ColumnMasks(const Shape& s, std::int64_t x0) {
    out[0] = lanes_between(0, s.ow - x0);
    out[1] = lanes_between(0, s.ow - x0 - 16);
    for (std::int64_t j = 0; j < s.kw; ++j) {
      const std::int64_t col0 = x0 + j - s.pw;
      in[j][0] = out[0] & lanes_between(-col0, s.w - col0);
      in[j][1] = out[1] & lanes_between(-col0 - 16, s.w - col0 - 16);
    }
  }
};

/// Output rows of KB consecutive filters (from k0) for one image, 32 columns at a time.
template <int KB>
void forward_block(const Shape& s, const float* x, const float* wt, const float* b, bool relu, float* y,
                   std::int64_t k0) {
  const std::int64_t taps = s.kh * s.kw, plane = s.oh * s.ow;
  const __m512 zero = _mm512_setzero_ps();
  for (std::int64_t x0 = 0; x0 < s.ow; x0 += 32) {
    const ColumnMasks mask(s, x0);
    for (std::int64_t oy = 0; oy < s.oh; ++oy) {
      __m512 acc[KB][2];
#pragma GCC unroll 16
      for (int r = 0; r < KB; ++r) acc[r][0] = acc[r][1] = _mm512_set1_ps(b != nullptr ? b[k0 + r] : 0.0f);
      for (std::int64_t i = 0; i < s.kh; ++i) {
        const std::int64_t iy = oy + i - s.ph;
        if (iy < 0 || iy >= s.h) continue;
        const float* row = x + iy * s.w + x0 - s.pw;
        for (std::int64_t j = 0; j < s.kw; ++j) {
          const __m512 v0 = _mm512_maskz_loadu_ps(mask.in[j][0], row + j);
          const __m512 v1 = _mm512_maskz_loadu_ps(mask.in[j][1], row + j + 16);
          const float* tap = wt + k0 * taps + i * s.kw + j;
#pragma GCC unroll 16
          for (int r = 0; r < KB; ++r) {
            const __m512 c = _mm512_set1_ps(tap[r * taps]);
            acc[r][0] = _mm512_fmadd_ps(c, v0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(c, v1, acc[r][1]);
          }
        }
      }
#pragma GCC unroll 16
      for (int r = 0; r < KB; ++r) {
        float* out = y + (k0 + r) * plane + oy * s.ow + x0;
        for (int v = 0; v < 2; ++v) {
          __m512 value = acc[r][v];
          // As relu does: zero where <= 0, NaN kept.
          if (relu) value = _mm512_mask_mov_ps(value, _mm512_cmp_ps_mask(value, zero, _CMP_LE_OQ), zero);
          _mm512_mask_storeu_ps(out + 16 * v, mask.out[v], value);
        }
      }
    }
  }
}

}  // namespace detail

/// y[o] = b[o] + the filter w[o] ([out_c, kh, kw]) slid over the plane x ([h, w]); then
/// max(., 0) with `relu`. y: [out_c, oh, ow] of one image.
inline void forward(const Shape& s, const float* x, const float* w, const float* b, bool relu, float* y) {
  constexpr int kBlock = 8;  // filters per pass: 2 x 8 accumulators
  std::int64_t k = 0;
  for (; k + kBlock <= s.out_c; k += kBlock) detail::forward_block<kBlock>(s, x, w, b, relu, y, k);
  switch (s.out_c - k) {
    case 1:
      detail::forward_block<1>(s, x, w, b, relu, y, k);
      break;
    case 2:
      detail::forward_block<2>(s, x, w, b, relu, y, k);
      break;
    case 3:
      detail::forward_block<3>(s, x, w, b, relu, y, k);
      break;
    case 4:
      detail::forward_block<4>(s, x, w, b, relu, y, k);
      break;
    case 5:
      detail::forward_block<5>(s, x, w, b, relu, y, k);
      break;
    case 6:
      detail::forward_block<6>(s, x, w, b, relu, y, k);
      break;
    case 7:
      detail::forward_block<7>(s, x, w, b, relu, y, k);
      break;
    default:
      break;
  }
}

#endif  // TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512

}  // namespace one_channel
