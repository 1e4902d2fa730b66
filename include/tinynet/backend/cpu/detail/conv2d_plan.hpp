#pragma once
/// \file
/// How the CPU's conv2d kernels split a convolution: samples per GEMM, chunks per batch,
/// which shapes take Winograd or the direct one-channel kernel, and the scratch each chunk
/// needs. Shared by every vector level (simd/conv2d.inl) and by the scratch sizes the ops
/// allocate.

#include <algorithm>
#include <cstdint>

#include "tinynet/backend/conv2d.hpp"
#include "tinynet/backend/cpu/detail/bf16_operand.hpp"
#include "tinynet/backend/cpu/detail/conv2d_one_channel.hpp"
#include "tinynet/backend/cpu/detail/winograd.hpp"
#include "tinynet/core/parallel.hpp"

namespace tinynet::backend::cpu {

/// Samples per GEMM: small outputs (LeNet's 8x8) are batched side by side so that each
/// product has at least ~512 columns; large ones go one sample per product.
inline std::int64_t cpu_group(const Conv2dGeometry& g) {
  return std::max<std::int64_t>(1, std::min<std::int64_t>(g.n, 512 / g.col_cols()));
}
/// Elements of one group's column matrix.
inline std::int64_t cpu_col_size(const Conv2dGeometry& g) { return g.col_size() * cpu_group(g); }
/// Winograd F(2x2, 3x3) fits: stride-1 3x3 kernels, padding at most 2 (so that the input
/// gradient is such a convolution too), and channels enough on both sides for its 16
/// small GEMMs to beat one im2col GEMM (docs/performance.md).
inline bool winograd_shape(const Conv2dGeometry& g) {
  return g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 && g.ph <= 2 && g.pw <= 2 && g.c >= 16 && g.out_c >= 16;
}
/// The Winograd view of a group of `count` samples: the forward convolution, and the one
/// that carries the output gradient back to the input (flipped filters, padding 2 - p).
inline winograd::Shape winograd_forward(const Conv2dGeometry& g, std::int64_t count) {
  return {g.kh, g.c, g.h, g.w, g.out_c, g.oh, g.ow, g.ph, g.pw, count};
}
inline winograd::Shape winograd_input_grad(const Conv2dGeometry& g, std::int64_t count) {
  return {g.kh, g.out_c, g.oh, g.ow, g.c, g.h, g.w, 2 - g.ph, 2 - g.pw, count};
}
/// One input channel, stride 1, a kernel up to 5x5: the direct kernel fits.
inline bool one_channel_shape(const Conv2dGeometry& g) {
  return g.c == 1 && g.sh == 1 && g.sw == 1 && one_channel::supports(g.kh, g.kw);
}
inline one_channel::Shape one_channel_view(const Conv2dGeometry& g) {
  return {g.h, g.w, g.out_c, g.kh, g.kw, g.ph, g.pw, g.oh, g.ow};
}

/// How many chunks a batch is split into; each has its own scratch.
inline std::int64_t conv_chunks(std::int64_t batch) {
  return std::max<std::int64_t>(1, std::min<std::int64_t>(batch, get_num_threads()));
}

/// n rounded up to a multiple of 16 elements (a 64-byte line of floats), so that every
/// chunk's scratch starts on a line: a row read with unaligned loads that straddle two
/// lines costs twice the loads.
inline std::int64_t whole_lines(std::int64_t n) { return (n + 15) / 16 * 16; }

/// Scratch elements conv2d_forward needs per chunk: a group's columns and the GEMM's
/// output in the column layout, or the group's Winograd tiles and products.
inline std::int64_t conv2d_forward_scratch_per_chunk(const Conv2dGeometry& g) {
  const std::int64_t im2col = cpu_col_size(g) + g.out_c * g.col_cols() * cpu_group(g);
  if (!winograd_shape(g)) return whole_lines(im2col);
  const winograd::Shape s = winograd_forward(g, cpu_group(g));
  return whole_lines(std::max(im2col, s.v_size() + s.m_size()));
}
/// Images per product of Winograd's weight gradient: sums of at least 288 tiles (two of
/// NET's images); longer groups leave L2 (measured: docs/performance.md).
inline std::int64_t winograd_weight_grad_group(const Conv2dGeometry& g) {
  const std::int64_t tiles = winograd_forward(g, 1).tiles();
  return std::clamp<std::int64_t>((288 + tiles - 1) / tiles, 1, g.n);
}
/// Samples per group of the backward pass where Winograd's weight gradient runs: enough
/// for its sums, since it runs in the loop over groups (on the output gradient the loop has
/// just masked, while it is in cache). Elsewhere the backward pass takes cpu_group, which
/// the weight gradient's columns are sized for.
inline std::int64_t backward_group(const Conv2dGeometry& g) {
  return winograd_shape(g) ? std::max(cpu_group(g), winograd_weight_grad_group(g)) : cpu_group(g);
}
/// Scratch of Winograd's weight gradient: the chunk's partial gradient of the transformed
/// filters, then a group's input and output-gradient tiles.
inline std::int64_t winograd_weight_grad_scratch(const Conv2dGeometry& g) {
  const winograd::Shape s = winograd_forward(g, backward_group(g));
  return s.u_size() + s.v_size() + s.m_size();
}
/// Stride 1 and padding that keeps the size (an odd kernel, (k - 1) / 2 on each side), wider
/// than 1x1: the weight gradient can read the input's rows shifted in place
/// (simd/conv2d_shifted_rows.inl) instead of im2col's columns.
inline bool same_padded_shape(const Conv2dGeometry& g) {
  return g.sh == 1 && g.sw == 1 && g.kh % 2 == 1 && g.kw % 2 == 1 && g.kh * g.kw > 1 && g.ph == (g.kh - 1) / 2 &&
         g.pw == (g.kw - 1) / 2;
}
/// The shifted rows' layout of `count` samples: rows of w + pw floats (the left padding
/// shared with the previous row's right), images of h + ph such rows (the top padding
/// shared likewise), a channel's images one after another, then zeros as far as the last
/// products' shifted reads reach (2 ph rows and 2 pw floats past the last image's data).
struct ShiftedRows {
  std::int64_t row, image, count, plane;
  explicit ShiftedRows(const Conv2dGeometry& g, std::int64_t n)
      : row(g.w + g.pw),
        image((g.h + g.ph) * row),
        count(n),
        plane(whole_lines(n * image + 2 * g.ph * row + 2 * g.pw)) {}
  /// The products' length: every position of every image's rows (those past the image's
  /// own width and height multiply the output gradient's zeros).
  std::int64_t k() const { return count * image; }
};
/// Scratch of the shifted rows' weight gradient: the input's planes, then the output
/// gradient in the same positions (whole lines per channel).
inline std::int64_t shifted_rows_scratch(const Conv2dGeometry& g, std::int64_t count) {
  const ShiftedRows s(g, count);
  return g.c * s.plane + g.out_c * whole_lines(s.k());
}

/// The part of a backward chunk that holds the weight gradient's columns (im2col), its
/// shifted rows, or Winograd's weight-gradient scratch; and the part that holds the input
/// gradient's columns or its Winograd tiles and products.
inline std::int64_t conv2d_backward_dw_scratch(const Conv2dGeometry& g) {
  return std::max({cpu_col_size(g), winograd_shape(g) ? winograd_weight_grad_scratch(g) : 0,
                   same_padded_shape(g) ? shifted_rows_scratch(g, cpu_group(g)) : 0});
}
inline std::int64_t conv2d_backward_dx_scratch(const Conv2dGeometry& g) {
  if (!winograd_shape(g)) return cpu_col_size(g);
  const winograd::Shape s = winograd_input_grad(g, backward_group(g));
  return std::max(cpu_col_size(g), s.v_size() + s.m_size());
}
/// Scratch elements conv2d_backward needs per chunk: the weight and input gradients'
/// parts, the output gradient in the column layout, and partial weight and bias gradients.
inline std::int64_t conv2d_backward_scratch_per_chunk(const Conv2dGeometry& g) {
  return whole_lines(conv2d_backward_dw_scratch(g) + conv2d_backward_dx_scratch(g) +
                     g.out_c * g.col_cols() * backward_group(g) + g.out_c * g.col_rows() + g.out_c);
}

/// The transformed filters (Winograd) or W^T (the im2col input gradient) after the chunks.
inline std::int64_t conv2d_forward_filters(const Conv2dGeometry& g) {
  return whole_lines(winograd_shape(g) ? winograd_forward(g, 1).u_size() : 0);
}
inline std::int64_t conv2d_backward_filters(const Conv2dGeometry& g) {
  return whole_lines(winograd_shape(g) ? winograd_input_grad(g, 1).u_size() : g.out_c * g.col_rows());
}

/// The filters as a bfloat16 operand, for the forward pass (Winograd's 16 transformed
/// planes or the im2col GEMM's left operand, whichever is larger).
inline std::int64_t conv2d_forward_bf16_weights(const Conv2dGeometry& g) {
  const std::int64_t planes = winograd_shape(g) ? winograd_forward(g, 1).points() : 0;
  return whole_lines(std::max(planes * bf16_operand_floats(g.out_c, g.c), bf16_operand_floats(g.out_c, g.col_rows())));
}
/// The filters as a bfloat16 operand for the input gradient (Winograd's or W^T).
inline std::int64_t conv2d_backward_bf16_weights(const Conv2dGeometry& g) {
  const std::int64_t planes = winograd_shape(g) ? winograd_input_grad(g, 1).points() : 0;
  return whole_lines(std::max(planes * bf16_operand_floats(g.c, g.out_c), bf16_operand_floats(g.col_rows(), g.out_c)));
}
/// A chunk's output gradient as a bfloat16 operand (the im2col weight gradient's).
inline std::int64_t conv2d_backward_bf16_per_chunk(const Conv2dGeometry& g) {
  return whole_lines(bf16_operand_floats(g.out_c, g.col_cols() * backward_group(g)));
}

}  // namespace tinynet::backend::cpu
