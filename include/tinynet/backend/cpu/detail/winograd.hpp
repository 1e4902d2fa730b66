#pragma once
/// \file
/// Winograd F(2x2, 3x3): its transform matrices, the shape of a convolution as the
/// transforms see it (which sizes the scratch), and the filter transform, shared by every
/// vector level. The tile transforms and products are in simd/winograd.inl.

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace tinynet::backend::cpu::winograd {

/// The transform matrices of F(2, R) (R = 3 only, see above).
template <int R>
struct Matrices;

template <>
struct Matrices<3> {
  static constexpr int a = 4;
  static constexpr float BT[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, 1, -1, 0}, {0, 1, 0, -1}};
  static constexpr double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {-0.5, 0.5, -0.5}, {0, 0, 1}};
  static constexpr float AT[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
  /// AT transposed: the weight gradient carries an output-gradient tile e to A e A^T.
  static constexpr float A[4][2] = {{1, 0}, {1, 1}, {1, -1}, {0, -1}};
};

/// A stride-1 r x r convolution of `count` images, as the transforms see it.
struct Shape {
  std::int64_t r;              // kernel extent (3)
  std::int64_t in_c, h, w;     // input planes
  std::int64_t out_c, oh, ow;  // output planes
  std::int64_t ph, pw;         // zero padding
  std::int64_t count;          // images side by side

  std::int64_t points() const { return (r + 1) * (r + 1); }
  std::int64_t tiles_h() const { return (oh + 1) / 2; }
  std::int64_t tiles_w() const { return (ow + 1) / 2; }
  std::int64_t tiles() const { return count * tiles_h() * tiles_w(); }
  /// Row length of V and M: tiles rounded up to a whole vector.
  std::int64_t padded_tiles() const { return (tiles() + 15) / 16 * 16; }
  /// Distance between the planes of V and of M: one cache line more than the data, so
  /// that the values of one tile do not all fall into one L1 set (plane sizes are often
  /// multiples of 4 KiB: 64 channels x 176 tiles).
  std::int64_t v_plane() const { return in_c * padded_tiles() + 16; }
  std::int64_t m_plane() const { return out_c * padded_tiles() + 16; }
  std::int64_t u_size() const { return points() * out_c * in_c; }
  std::int64_t v_size() const { return points() * v_plane(); }
  std::int64_t m_size() const { return points() * m_plane(); }
};

/// U[xi][o][i] = (G g G^T)[xi] for the filter g = w[o, i] ([out_c, in_c, R, R]); with
/// `for_input_gradient`, U[xi][i][o] for g = w[o, i] rotated by 180 degrees (the filters
/// that carry an output gradient back to the input).
template <int R>
void transform_weights(const float* w, std::int64_t out_c, std::int64_t in_c, bool for_input_gradient, float* u) {
  using Mx = Matrices<R>;
  constexpr int a = Mx::a;
  const std::int64_t plane = out_c * in_c;
  for (std::int64_t o = 0; o < out_c; ++o)
    for (std::int64_t i = 0; i < in_c; ++i) {
      const float* src = w + (o * in_c + i) * R * R;
      double t[a][R];  // G g
      for (int k = 0; k < a; ++k)
        for (int c = 0; c < R; ++c) {
          double acc = 0;
          for (int l = 0; l < R; ++l)
            acc += Mx::G[k][l] * (for_input_gradient ? src[(R - 1 - l) * R + (R - 1 - c)] : src[l * R + c]);
          t[k][c] = acc;
        }
      const std::int64_t at = for_input_gradient ? i * out_c + o : o * in_c + i;
      for (int k = 0; k < a; ++k)  // (G g) G^T
        for (int l = 0; l < a; ++l) {
          double acc = 0;
          for (int c = 0; c < R; ++c) acc += t[k][c] * Mx::G[l][c];
          u[(k * a + l) * plane + at] = static_cast<float>(acc);
        }
    }
}

/// The adjoint of transform_weights (forward filters): dw[o, i] (+)= G^T dU[.][o][i] G for
/// dU[xi][o][i] (the weight gradient of the transformed filters), in double.
template <int R>
void transform_weight_grad(const float* du, std::int64_t out_c, std::int64_t in_c, bool accumulate, float* dw) {
  using Mx = Matrices<R>;
  constexpr int a = Mx::a;
  const std::int64_t plane = out_c * in_c;
  for (std::int64_t at = 0; at < plane; ++at) {
    double t[a][R];  // dU G
    for (int k = 0; k < a; ++k)
      for (int c = 0; c < R; ++c) {
        double acc = 0;
        for (int l = 0; l < a; ++l) acc += static_cast<double>(du[(k * a + l) * plane + at]) * Mx::G[l][c];
        t[k][c] = acc;
      }
    float* dst = dw + at * R * R;
    for (int r = 0; r < R; ++r)  // G^T (dU G)
      for (int c = 0; c < R; ++c) {
        double acc = 0;
        for (int k = 0; k < a; ++k) acc += Mx::G[k][r] * t[k][c];
        dst[r * R + c] = accumulate ? static_cast<float>(dst[r * R + c] + acc) : static_cast<float>(acc);
      }
  }
}

}  // namespace tinynet::backend::cpu::winograd
