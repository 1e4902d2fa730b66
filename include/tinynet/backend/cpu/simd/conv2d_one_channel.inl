/// \file
/// Direct convolution for layers with one input channel (the first layer on grayscale
/// images) at the AVX2 and AVX-512 levels (float32, or bfloat16 products with AVX512-BF16,
/// below): the output without im2col. As a GEMM
/// such a layer has an inner dimension of only kh*kw (9 or 25), and its column matrix is
/// kh*kw times the image; here each output row is kh*kw multiply-adds of shifted input
/// rows, two vectors of outputs at a time, 8 filters a pass (6 with AVX2's sixteen
/// registers). (A direct weight gradient was measured no faster than im2col + GEMM:
/// docs/performance.md.)

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
/// max(., 0) with `relu`. y: [out_c, oh, ow] of one image, float or (from the AVX2 level
/// up) bfloat16.
template <typename Y>
void forward(const Shape& s, const float* x, const float* w, const float* b, bool relu, Y* y) {
  std::int64_t k = 0;
  for (; k + detail::kFilterBlock <= s.out_c; k += detail::kFilterBlock)
    detail::forward_block<detail::kFilterBlock>(s, x, w, b, relu, y, k);
  detail::forward_rest<detail::kFilterBlock - 1>(s.out_c - k, s, x, w, b, relu, y, k);
}

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512_BF16

// With bfloat16 products (autocast, on a CPU with AVX512-BF16), vdpbf16ps multiplies two
// taps of a filter row at once: the image is rounded into a plane of pairs of neighbouring
// columns, P[r][q] = (x[r][q - pw], x[r][q - pw + 1]) (zero outside the image), so that
// lane l of a load at column x0 + j holds the pair under taps j and j + 1 of output column
// x0 + l; a filter row's taps are paired likewise, an odd last tap with zero. 15 products
// of pairs instead of 25 multiply-adds for a 5x5 filter, 6 instead of 9 for a 3x3.

namespace detail {

/// Columns of the pairs plane: every column an output's taps reach, ow + kw - 1, and one.
inline std::int64_t pairs_width(const Shape& s) { return s.ow + s.kw; }

/// The image x ([h, w]) as its plane of pairs, rows of pairs_width(s) 32-bit words.
inline void input_pairs(const Shape& s, const float* x, std::uint32_t* p) {
  alignas(64) static constexpr std::uint16_t order[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                                          8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i perm = _mm512_load_si512(order);
  const std::int64_t wp = pairs_width(s);
  for (std::int64_t r = 0; r < s.h; ++r)
    for (std::int64_t q0 = 0; q0 < wp; q0 += kLanes) {
      // Column c = q - pw of the image (first of the pair) and c + 1 (second).
      const float* at = x + r * s.w + q0 - s.pw;
      const __m512 lo = _mm512_maskz_loadu_ps(lanes_between(s.pw - q0, s.w + s.pw - q0), at);
      const __m512 hi = _mm512_maskz_loadu_ps(lanes_between(s.pw - 1 - q0, s.w + s.pw - 1 - q0), at + 1);
      const __m512i both = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
      _mm512_mask_storeu_epi32(p + r * wp + q0, lanes_between(0, wp - q0), _mm512_permutexvar_epi16(perm, both));
    }
}

/// The filters w ([out_c, kh, kw]) as pairs of taps along each row, [out_c, kh, (kw + 1) / 2].
inline void filter_pairs(const Shape& s, const float* w, std::uint32_t* p) {
  const std::int64_t kp = (s.kw + 1) / 2;
  for (std::int64_t k = 0; k < s.out_c; ++k)
    for (std::int64_t i = 0; i < s.kh; ++i)
      for (std::int64_t jp = 0; jp < kp; ++jp) {
        const float* tap = w + (k * s.kh + i) * s.kw + 2 * jp;
        const std::uint32_t second = 2 * jp + 1 < s.kw ? tinynet::detail::float_to_bf16_bits(tap[1]) : 0u;
        p[(k * s.kh + i) * kp + jp] = tinynet::detail::float_to_bf16_bits(tap[0]) | second << 16;
      }
}

/// forward_block's bfloat16 products, from the pairs planes of the image (xp) and filters (wp).
template <int KB, typename Y>
void forward_block_bf16(const Shape& s, const std::uint32_t* xp, const std::uint32_t* wp, const float* b, bool relu,
                        Y* y, std::int64_t k0) {
  const std::int64_t kp = (s.kw + 1) / 2, taps = s.kh * kp, plane = s.oh * s.ow, width = pairs_width(s);
  for (std::int64_t x0 = 0; x0 < s.ow; x0 += 2 * kLanes) {
    const Mask out[2] = {lanes_between(0, s.ow - x0), lanes_between(0, s.ow - x0 - kLanes)};
    for (std::int64_t oy = 0; oy < s.oh; ++oy) {
      __m512 acc[KB][2];
#pragma GCC unroll 16
      for (int r = 0; r < KB; ++r) acc[r][0] = acc[r][1] = _mm512_set1_ps(b != nullptr ? b[k0 + r] : 0.0f);
      for (std::int64_t i = 0; i < s.kh; ++i) {
        const std::int64_t iy = oy + i - s.ph;
        if (iy < 0 || iy >= s.h) continue;
        const std::uint32_t* row = xp + iy * width + x0;
        for (std::int64_t jp = 0; jp < kp; ++jp) {
          const auto v0 = reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi32(out[0], row + 2 * jp));
          const auto v1 = reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi32(out[1], row + 2 * jp + kLanes));
          const std::uint32_t* tap = wp + (k0 * s.kh + i) * kp + jp;
#pragma GCC unroll 16
          for (int r = 0; r < KB; ++r) {
            const auto c = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(tap[r * taps])));
            acc[r][0] = _mm512_dpbf16_ps(acc[r][0], c, v0);
            acc[r][1] = _mm512_dpbf16_ps(acc[r][1], c, v1);
          }
        }
      }
#pragma GCC unroll 16
      for (int r = 0; r < KB; ++r) {
        Y* dst = y + (k0 + r) * plane + oy * s.ow + x0;
        for (int v = 0; v < 2; ++v) {
          const Vec value{acc[r][v]};
          bf16::detail::store_native(dst + kLanes * v, out[v], relu ? TINYNET_ISA_NAMESPACE::relu(value) : value);
        }
      }
    }
  }
}

template <int KB, typename Y>
void forward_rest_bf16(std::int64_t filters, const Shape& s, const std::uint32_t* xp, const std::uint32_t* wp,
                       const float* b, bool relu, Y* y, std::int64_t k0) {
  if constexpr (KB > 0) {
    if (filters == KB) return forward_block_bf16<KB>(s, xp, wp, b, relu, y, k0);
    forward_rest_bf16<KB - 1>(filters, s, xp, wp, b, relu, y, k0);
  }
}

}  // namespace detail

/// Words of scratch forward_bf16 needs: the image's pairs plane.
inline std::int64_t input_pairs_words(const Shape& s) { return s.h * detail::pairs_width(s); }

/// forward with bfloat16 products (the avx512_bf16 level): `wp` the filters prepared by
/// detail::filter_pairs, `xp` input_pairs_words(s) words of scratch.
template <typename Y>
void forward_bf16(const Shape& s, const float* x, const std::uint32_t* wp, const float* b, bool relu, Y* y,
                  std::uint32_t* xp) {
  detail::input_pairs(s, x, xp);
  std::int64_t k = 0;
  for (; k + detail::kFilterBlock <= s.out_c; k += detail::kFilterBlock)
    detail::forward_block_bf16<detail::kFilterBlock>(s, xp, wp, b, relu, y, k);
  detail::forward_rest_bf16<detail::kFilterBlock - 1>(s.out_c - k, s, xp, wp, b, relu, y, k);
}

#endif  // TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512_BF16

#endif  // TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2

}  // namespace one_channel
