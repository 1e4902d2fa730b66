#pragma once
/// \file
/// conv2d's geometry, shared by the ops layer and both backends' kernels.

#include <cstdint>

namespace tinynet::backend {

/// A 2-d convolution of NCHW input [n, c, h, w] with weight [out_c, c / groups, kh, kw]
/// into output [n, out_c, oh, ow]; the column matrix of one sample (im2col) is
/// [c * kh * kw, oh * ow]. Kernel tap (i, j) of output (y, x) reads input
/// (y*sh - ph + i*dil_h, x*sw - pw + j*dil_w); output channel o reads the input channels of
/// its group, o / (out_c / groups).
struct Conv2dGeometry {
  std::int64_t n, c, h, w;      // input
  std::int64_t out_c, kh, kw;   // weight [out_c, c / groups, kh, kw]
  std::int64_t sh, sw, ph, pw;  // stride, padding
  std::int64_t oh, ow;          // output extents
  std::int64_t dil_h = 1, dil_w = 1, groups = 1;

  std::int64_t col_rows() const { return c * kh * kw; }
  std::int64_t col_cols() const { return oh * ow; }
  std::int64_t col_size() const { return col_rows() * col_cols(); }

  /// Input channels per group, and the weight's elements per output channel.
  std::int64_t group_in() const { return c / groups; }
  std::int64_t group_out() const { return out_c / groups; }
  std::int64_t weight_cols() const { return group_in() * kh * kw; }

  /// One group and no dilation: the convolutions the specialised kernels (im2col + GEMM,
  /// Winograd, one-channel) are written for.
  bool plain() const { return groups == 1 && dil_h == 1 && dil_w == 1; }

  /// Stride 1, no padding: each output row reads ow consecutive inputs of one input row.
  bool stride1_unpadded() const { return sh == 1 && sw == 1 && ph == 0 && pw == 0; }
};

}  // namespace tinynet::backend
