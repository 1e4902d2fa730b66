#pragma once
/// \file
/// conv2d's geometry, shared by the ops layer and both backends' kernels.

#include <cstdint>

namespace tinynet::backend {

/// A 2-d convolution of NCHW input [n, c, h, w] with weight [out_c, c, kh, kw] into
/// output [n, out_c, oh, ow]; the column matrix of one sample (im2col) is
/// [c * kh * kw, oh * ow].
struct Conv2dGeometry {
  std::int64_t n, c, h, w;      // input
  std::int64_t out_c, kh, kw;   // weight [out_c, c, kh, kw]
  std::int64_t sh, sw, ph, pw;  // stride, padding
  std::int64_t oh, ow;          // output extents

  std::int64_t col_rows() const { return c * kh * kw; }
  std::int64_t col_cols() const { return oh * ow; }
  std::int64_t col_size() const { return col_rows() * col_cols(); }

  /// Stride 1, no padding: each output row reads ow consecutive inputs of one input row.
  bool stride1_unpadded() const { return sh == 1 && sw == 1 && ph == 0 && pw == 0; }
};

}  // namespace tinynet::backend
