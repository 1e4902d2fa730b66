/// \file
/// The weight gradient of a stride-1 convolution whose padding keeps the size, without
/// im2col. im2col's row (c, ky, kx) is channel c's input moved by ky rows and kx positions;
/// with the input laid out once in rows that carry their own zero padding (ShiftedRows,
/// backend/cpu/detail/conv2d_plan.hpp), each such row is the same plane read from another
/// place, and gemm_nt_rows multiplies the output gradient, laid out in the same positions,
/// by the planes where they lie. The layout copies the input once where im2col copies it
/// kh * kw times; the products grow by the padding positions they run over ((h + ph)(w + pw)
/// / (h w): 1.31 for 7x7 images, 1.07 for 28x28).

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2

namespace shifted_rows {

/// dst[0, n) from src: copied, widened from bfloat16, or rounded to bfloat16's values.
template <typename X>
inline void put_row(float* dst, const X* src, std::int64_t n, bool round) {
  if constexpr (std::is_same_v<X, float>) {
    if (round) return tinynet::detail::round_to_bf16(src, n, dst);
  }
  copy_run(dst, src, n);
}

/// dst[0, len): image j's row y (w values at row(j, y)) at j * image + y * row + first, zeros
/// everywhere else.
template <typename RowAt>
void lay_out(const Conv2dGeometry& g, const ShiftedRows& s, std::int64_t first, const RowAt& row, bool round,
             float* dst, std::int64_t len) {
  std::int64_t at = 0;  // dst is written up to here
  for (std::int64_t j = 0; j < s.count; ++j)
    for (std::int64_t y = 0; y < g.h; ++y) {
      const std::int64_t pos = j * s.image + y * s.row + first;
      std::fill(dst + at, dst + pos, 0.0f);
      put_row(dst + pos, row(j, y), g.w, round);
      at = pos + g.w;
    }
  std::fill(dst + at, dst + len, 0.0f);
}

/// dw += the weight gradient of `count` samples: gyc their output gradient (channel o of
/// sample j at gyc + o * ld + j * oh * ow), xs their input; `scratch`:
/// shifted_rows_scratch(g, count) floats. With `round_x` / `round_gy` the operands are
/// rounded to bfloat16's values as they are laid out (bfloat16 products on float kernels);
/// a bfloat16 input is widened, its values being the operand already.
template <typename X>
void weight_grad(const Conv2dGeometry& g, const float* gyc, std::int64_t ld, const X* xs, std::int64_t count,
                 bool round_x, bool round_gy, float* scratch, float* dw) {
  const ShiftedRows s(g, count);
  const std::int64_t hw = g.h * g.w, lda = whole_lines(s.k()), taps = g.kh * g.kw;
  float* planes = scratch;
  float* gy = scratch + g.c * s.plane;
  // The input at (y + ph, x + pw) of its padded rows, the output gradient at (y, x): the
  // product of position q with plane position q + ky * row + kx pairs output (y, x) with
  // input (y + ky - ph, x + kx - pw), or with a zero where that lies in the padding.
  for (std::int64_t c = 0; c < g.c; ++c)
    lay_out(
        g, s, g.ph * s.row + g.pw, [&](std::int64_t j, std::int64_t y) { return xs + (j * g.c + c) * hw + y * g.w; },
        round_x, planes + c * s.plane, s.plane);
  for (std::int64_t o = 0; o < g.out_c; ++o)
    lay_out(
        g, s, 0, [&](std::int64_t j, std::int64_t y) { return gyc + o * ld + j * hw + y * g.w; }, round_gy,
        gy + o * lda, lda);
  gemm_nt_rows(
      g.out_c, g.col_rows(), s.k(), gy, lda,
      [&](std::int64_t r) { return planes + r / taps * s.plane + r % taps / g.kw * s.row + r % taps % g.kw; }, dw,
      g.col_rows());
}

}  // namespace shifted_rows

#endif  // TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
