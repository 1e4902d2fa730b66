/// \file
/// Winograd F(2x2, 3x3) for stride-1 3x3 convolutions in float32 (AVX2 and AVX-512). Each
/// 4x4 input tile d becomes 16 values B^T d B, each filter g becomes G g G^T, and the
/// products become 16 independent GEMMs [out_c x in_c] x [in_c x tiles]: per 2x2 output
/// tile and channel pair 16 multiply-adds instead of im2col's 36. A^T m A turns each
/// product tile back into 2x2 outputs. conv2d uses it for the forward pass, for the input
/// gradient (a convolution of the output gradient with the flipped filters) and for the
/// weight gradient: G^T [sum over tiles of (A e A^T) (.) (B^T d B)] G.
///
/// The matrices come from interpolation at 0, 1, -1 and infinity (Toom-Cook, transposed for
/// correlation), the denominators moved into G so that B^T and A^T hold 0 and +-1 only, and
/// a row of B^T negated together with the same row of G so that it starts with a positive
/// term (the products are unchanged). The code is written over the matrices (Matrices<R>)
/// so that another tile size is a table, not a kernel; F(2x2, 5x5) was measured and left
/// out: its float32 error is several times that of summing directly (docs/performance.md).
///
/// Layouts, for a group of images whose tiles are numbered p = (image * tiles_h + ty) *
/// tiles_w + tx, and xi = 0 .. a*a-1: U[xi][out_c][in_c], V[xi][in_c][ld], M[xi][out_c][ld],
/// ld = padded_tiles(), the planes of V and M v_plane() and m_plane() apart. The transforms
/// take a vector of tiles at a time (several short tile rows side by side); the products go through
/// gemm_rows (V read in place, no packing). With bfloat16 products the input and
/// output-gradient transforms round their values as they store them: on AVX512-BF16
/// straight into the operand layouts of simd/bf16_operands.inl (Bf16Pairs, Bf16Rows in
/// simd/winograd_planes.inl), elsewhere into the float32 planes (RoundedF32Planes), which
/// the float32 kernels then read as the operand: no pass converting the planes afterwards.

namespace winograd {

using cpu::winograd::Matrices;
using cpu::winograd::Shape;
using cpu::winograd::transform_weight_grad;
using cpu::winograd::transform_weights;

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2

namespace detail {

using TINYNET_ISA_NAMESPACE::detail::any;
using TINYNET_ISA_NAMESPACE::detail::lanes_between;

/// acc + C * x for the non-zero coefficient C = Mat[Row][K], known at compile time: an
/// add, a subtraction or a multiply-add. (Passed as its place in Mat: Clang 14 takes no
/// float template arguments.)
template <const auto& Mat, int Row, int K>
inline Vec add_term(Vec acc, Vec x) {
  constexpr float C = Mat[Row][K];
  if constexpr (C == 1.0f)
    return acc + x;
  else if constexpr (C == -1.0f)
    return acc - x;
  else
    return fmadd(Vec::set1(C), x, acc);
}

/// acc plus the terms K.. of row `Row` of Mat applied to x (zeros skipped).
template <const auto& Mat, int Row, int K>
inline Vec combine_rest(const Vec* x, Vec acc) {
  constexpr int n = static_cast<int>(std::extent_v<std::remove_reference_t<decltype(Mat[0])>>);
  if constexpr (K == n)
    return acc;
  else if constexpr (Mat[Row][K] == 0.0f)
    return combine_rest<Mat, Row, K + 1>(x, acc);
  else
    return combine_rest<Mat, Row, K + 1>(x, add_term<Mat, Row, K>(acc, x[K]));
}

/// sum over k of Mat[Row][k] * x[k] (a row of B^T or A^T), terms in order, zeros skipped.
template <const auto& Mat, int Row, int K = 0>
inline Vec combine(const Vec* x) {
  if constexpr (Mat[Row][K] == 0.0f)
    return combine<Mat, Row, K + 1>(x);
  else if constexpr (Mat[Row][K] == 1.0f)
    return combine_rest<Mat, Row, K + 1>(x, x[K]);
  else
    return combine_rest<Mat, Row, K + 1>(x, Vec::set1(Mat[Row][K]) * x[K]);
}

/// out[k] = row k of Mat applied to x, for each row k.
template <const auto& Mat, int... K>
inline void apply_rows(const Vec* x, Vec* out, std::integer_sequence<int, K...>) {
  ((out[K] = combine<Mat, K>(x)), ...);
}

/// Tiles of one tile row that share a vector: image j's tile row ty, tiles tx .. tx+n-1 in
/// lanes lane .. lane+n-1.
struct Segment {
  std::int64_t j, ty, tx;
  int lane, n;
};

/// Calls f(p0, segments, count, lanes) for vectors of tiles in the order of p: when tile
/// rows are at most half a vector long, as many whole rows as fit in its lanes (an 8x8
/// output has 4-tile rows: 4 to a vector of 16), else each row a vector's worth at a time. p0 is the vector's first
/// tile; `lanes` marks the lanes in use.
template <typename F>
void for_each_tile_vector(const Shape& s, F&& f) {
  const std::int64_t tw = s.tiles_w(), th = s.tiles_h(), rows = s.count * th;
  Segment seg[kLanes];
  if (tw <= kLanes / 2) {
    const std::int64_t per = kLanes / tw;
    std::int64_t j = 0, ty = 0;  // of tile row q0
    for (std::int64_t q0 = 0; q0 < rows; q0 += per) {
      const int n = static_cast<int>(std::min(per, rows - q0));
      for (int i = 0; i < n; ++i) {
        seg[i] = {j, ty, 0, static_cast<int>(i * tw), static_cast<int>(tw)};
        if (++ty == th) ty = 0, ++j;
      }
      f(q0 * tw, seg, n, lanes_between(0, n * tw));
    }
    return;
  }
  for (std::int64_t j = 0; j < s.count; ++j)
    for (std::int64_t ty = 0; ty < th; ++ty)
      for (std::int64_t tx0 = 0; tx0 < tw; tx0 += kLanes) {
        seg[0] = {j, ty, tx0, 0, static_cast<int>(std::min<std::int64_t>(kLanes, tw - tx0))};
        f((j * th + ty) * tw + tx0, seg, 1, lanes_between(0, seg[0].n));
      }
}

/// The lanes of a pair of vectors (lo: positions 0 .. kLanes-1, hi: the next kLanes) that hold a segment's
/// elements 2 * lane .. 2 * (lane + n) and whose column (position + shift) lies in [0, w).
inline void pair_masks(const Segment& g, std::int64_t shift, std::int64_t w, Mask& lo, Mask& hi) {
  const std::int64_t from = std::max<std::int64_t>(2 * g.lane, -shift),
                     to = std::min<std::int64_t>(2 * (g.lane + g.n), w - shift);
  lo = lanes_between(from, to);
  hi = lanes_between(from - kLanes, to - kLanes);
}

/// Where a vector of tiles reads its input (transform_input), the same for every channel:
/// row r of its tiles lies inside the plane for count[r] of its segments; the n-th of them,
/// segment seg[r][n], starts at at[r][n] from its channel's plane (pair element 2 * lane +
/// 2 * t + {0, 1} of a segment, for columns k and k + 1 of its tiles, is input column 2 *
/// (tx + t) - pw + k + {0, 1}, so at at[r][n] + k). lo / hi[k / 2][i] are the lanes of
/// segment i's columns k and k + 1 that lie in the row.
template <int A>
struct InputRows {
  int count[A];
  std::int64_t at[A][kLanes];
  std::uint8_t seg[A][kLanes];
  Mask lo[A / 2][kLanes], hi[A / 2][kLanes];
};

template <int A>
inline InputRows<A> input_rows(const Shape& s, const Segment* seg, int segs, std::int64_t image_stride) {
  InputRows<A> rows;
  for (int r = 0; r < A; ++r) rows.count[r] = 0;
  for (int i = 0; i < segs; ++i) {
    const std::int64_t shift = 2 * seg[i].tx - s.pw - 2 * seg[i].lane;
    for (int k = 0; k < A; k += 2) pair_masks(seg[i], shift + k, s.w, rows.lo[k / 2][i], rows.hi[k / 2][i]);
    for (int r = 0; r < A; ++r) {
      const std::int64_t iy = 2 * seg[i].ty - s.ph + r;
      if (iy < 0 || iy >= s.h) continue;
      const int n = rows.count[r]++;
      rows.at[r][n] = seg[i].j * image_stride + iy * s.w + shift;
      rows.seg[r][n] = static_cast<std::uint8_t>(i);
    }
  }
  return rows;
}

/// Where a vector of tiles puts its output (transform_output) or reads its output gradient
/// (transform_output_grad), the same for every channel: output row 2ty + i of its tiles
/// lies inside the plane for count[i] of its segments; the n-th of them, segment seg[i][n],
/// has its pairs (element 2 * lane + 2 * t + {0, 1} of a segment is output column 2 * (tx
/// + t) + {0, 1}) at at[i][n] from the channel's plane. lo / hi[n] are the lanes of
/// segment n's columns that lie in [0, ow).
struct OutputRows {
  int count[2];
  std::int64_t at[2][kLanes];
  std::uint8_t seg[2][kLanes];
  Mask lo[kLanes], hi[kLanes];
};

inline OutputRows output_rows(const Shape& s, const Segment* seg, int segs, std::int64_t image_stride) {
  OutputRows rows;
  rows.count[0] = rows.count[1] = 0;
  for (int n = 0; n < segs; ++n) {
    const std::int64_t shift = 2 * seg[n].tx - 2 * seg[n].lane;
    pair_masks(seg[n], shift, s.ow, rows.lo[n], rows.hi[n]);
    for (int i = 0; i < 2; ++i) {
      const std::int64_t oy = 2 * seg[n].ty + i;
      if (oy >= s.oh) continue;
      const int k = rows.count[i]++;
      rows.at[i][k] = seg[n].j * image_stride + oy * s.ow + shift;
      rows.seg[i][k] = static_cast<std::uint8_t>(n);
    }
  }
  return rows;
}

/// Calls f(c, p0, place, lanes) for every channel c < channels and vector of tiles (as
/// for_each_tile_vector gives them), place = where(seg, segs): worked out once per vector
/// for all the channels (done per channel and vector it was most of a transform's
/// instructions where several tile rows share a vector). Blocks of kBlock vectors, channel
/// by channel within a block: each plane's values are then stored a run of lines at a time
/// and each input plane read in order (every channel at each vector was measured slower on
/// 28x28 planes, whose lines the other channels' stores evict before the next vector fills
/// them). 32 vectors hold the weight gradient's group of images whole for the example
/// network and ResNet-20 (two 26x26 or 28x28 images, 26 or 28 vectors): blocks of 16
/// split them, and the example network's backward pass was measured slower for it.
template <typename Where, typename F>
void for_each_channel_vector(const Shape& s, std::int64_t channels, const Where& where, const F& f) {
  constexpr int kBlock = 32;
  decltype(where(nullptr, 0)) place[kBlock];
  std::int64_t first[kBlock];
  Mask in_use[kBlock];
  int n = 0;
  const auto run = [&] {
    for (std::int64_t c = 0; c < channels; ++c)
      for (int i = 0; i < n; ++i) f(c, first[i], place[i], in_use[i]);
    n = 0;
  };
  for_each_tile_vector(s, [&](std::int64_t p0, const Segment* seg, int segs, Mask lanes) {
    place[n] = where(seg, segs);
    first[n] = p0;
    in_use[n] = lanes;
    if (++n == kBlock) run();
  });
  run();
}

}  // namespace detail

/// V[xi][c][p] = (B^T d B)[xi] for each tile d of `in` (image j's channel c at in + j *
/// image_stride + c * channel_stride, rows of s.w elements: floats or, from the avx512 level
/// up, bfloat16), into `v` (F32Planes, RoundedF32Planes, or at the avx512_bf16 level and up
/// Bf16Rows or Bf16Pairs).
template <int R, typename Planes, typename X>
void transform_input(const Shape& s, const X* in, std::int64_t channel_stride, std::int64_t image_stride, Planes v) {
  using Mx = Matrices<R>;
  constexpr int a = Mx::a;
  const auto where = [&](const detail::Segment* seg, int segs) {
    return detail::input_rows<a>(s, seg, segs, image_stride);
  };
  detail::for_each_channel_vector(s, s.in_c, where, [&](std::int64_t c, std::int64_t p0, const auto& rows, Mask lanes) {
    const X* plane = in + c * channel_stride;
    // e[k][r] = (d B)[r][k], where lane l of d[r][k] is input (2ty - ph + r, 2tx - pw + k)
    // of the lane's tile (ty, tx).
    Vec e[a][a];
#pragma GCC unroll 8
    for (int r = 0; r < a; ++r) {
      Vec d[a];
#pragma GCC unroll 8
      for (int k = 0; k < a; k += 2) {  // columns k and k + 1: the even and odd elements of a pair
        PairRun<X> run;
        if (rows.count[r] == 1) {  // long tile rows: one segment
          const int i = rows.seg[r][0];
          run = PairRun<X>(rows.lo[k / 2][i], rows.hi[k / 2][i], plane + rows.at[r][0] + k);
        } else {
          for (int n = 0; n < rows.count[r]; ++n) {
            const int i = rows.seg[r][n];
            run.load(rows.lo[k / 2][i], rows.hi[k / 2][i], plane + rows.at[r][n] + k);
          }
        }
        run.split(d[k], d[k + 1]);
      }
      Vec db[a];
      detail::apply_rows<Mx::BT>(d, db, std::make_integer_sequence<int, a>{});
#pragma GCC unroll 8
      for (int k = 0; k < a; ++k) e[k][r] = db[k];
    }
    const auto out = v.at(c, p0);
#pragma GCC unroll 8
    for (int k = 0; k < a; ++k) {  // B^T (d B), column k
      Vec col[a];
      detail::apply_rows<Mx::BT>(e[k], col, std::make_integer_sequence<int, a>{});
#pragma GCC unroll 8
      for (int r = 0; r < a; ++r) out.store(r * a + k, col[r], lanes);
    }
  });
}

/// M[xi] = U[xi] V[xi] for every xi; split over xi when `parallel`.
inline void multiply(const Shape& s, const float* u, const float* v, float* m, bool parallel) {
  const std::int64_t ld = s.padded_tiles(), tiles = s.tiles();
  auto one = [&](std::int64_t xi) {
    gemm_rows(s.out_c, tiles, s.in_c, u + xi * s.out_c * s.in_c, s.in_c, v + xi * s.v_plane(), ld, m + xi * s.m_plane(),
              ld);
  };
  if (parallel) {
    parallel_for(s.points(), 1, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t xi = lo; xi < hi; ++xi) one(xi);
    });
  } else {
    for (std::int64_t xi = 0; xi < s.points(); ++xi) one(xi);
  }
}

/// out[j, o, y, x] (+)= (A^T m A) for each tile (+ bias[o]; then max(., 0) with `relu`,
/// NaN kept, as relu does). `accumulate` adds to out instead of overwriting it. Image j's
/// plane o is at out + j * image_stride + o * channel_stride, rows of s.ow elements: floats
/// or, from the avx2 level up, bfloat16 (rounded as stored).
template <int R, typename Y>
void transform_output(const Shape& s, const float* m, const float* bias, bool relu, bool accumulate, Y* out,
                      std::int64_t channel_stride, std::int64_t image_stride) {
  using Mx = Matrices<R>;
  constexpr int a = Mx::a;
  const std::int64_t ld = s.padded_tiles(), plane = s.m_plane();
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512_BF16
  constexpr bool native = std::is_same_v<Y, bfloat16>;  // vcvtneps2bf16 stores
#endif
  auto store = [&](Y* dst, Mask mask, Vec value) {
    if (relu) value = TINYNET_ISA_NAMESPACE::relu(value);
    if (accumulate) value = load_elems(dst, mask) + value;
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512_BF16
    if constexpr (native) return bf16::detail::store_native(dst, mask, value);
#endif
    store_elems(dst, mask, value);
  };
  const auto where = [&](const detail::Segment* seg, int segs) {
    return detail::output_rows(s, seg, segs, image_stride);
  };
  detail::for_each_channel_vector(
      s, s.out_c, where, [&](std::int64_t o, std::int64_t p0, const auto& rows, Mask lanes) {
        const Vec b = Vec::set1(bias != nullptr ? bias[o] : 0.0f);
        const float* src = m + o * ld + p0;
        Vec sc[2][a];  // (A^T m)[i][k], column by column
#pragma GCC unroll 8
        for (int k = 0; k < a; ++k) {
          Vec col[a], t[2];
#pragma GCC unroll 8
          for (int r = 0; r < a; ++r) col[r] = Vec::load(src + (r * a + k) * plane, lanes);
          detail::apply_rows<Mx::AT>(col, t, std::make_integer_sequence<int, 2>{});
          sc[0][k] = t[0];
          sc[1][k] = t[1];
        }
        Y* const dst_plane = out + o * channel_stride;
#pragma GCC unroll 2
        for (int i = 0; i < 2; ++i) {  // output row 2ty + i: (A^T m) A plus the bias, pairs interleaved
          Vec y[2], lo, hi;
          detail::apply_rows<Mx::AT>(sc[i], y, std::make_integer_sequence<int, 2>{});
          interleave(y[0] + b, y[1] + b, lo, hi);
          for (int n = 0; n < rows.count[i]; ++n) {
            Y* dst = dst_plane + rows.at[i][n];
            const Mask mlo = rows.lo[rows.seg[i][n]], mhi = rows.hi[rows.seg[i][n]];
            if (detail::any(mlo)) store(dst, mlo, lo);
            if (detail::any(mhi)) store(dst + kLanes, mhi, hi);
          }
        }
      });
}

/// E[xi][o][p] = (A e A^T)[xi] for each 2x2 tile e of the output gradient, tiled as the
/// forward pass tiles its output (zeros past its edge). Image j's plane o is at gy + j *
/// image_stride + o * channel_stride, rows of s.ow elements: floats or, from the avx2 level
/// up, bfloat16; E is laid out as M (F32Planes, or RoundedF32Planes with bfloat16 products
/// below AVX512-BF16), or as bfloat16 rows (Bf16Rows, on AVX512-BF16).
template <int R, typename Planes, typename G>
void transform_output_grad(const Shape& s, const G* gy, std::int64_t channel_stride, std::int64_t image_stride,
                           Planes e) {
  using Mx = Matrices<R>;
  constexpr int a = Mx::a;
  static_assert(Mx::A[1][0] == Mx::AT[0][1] && Mx::A[3][1] == Mx::AT[1][3], "A must be AT transposed");
  const auto where = [&](const detail::Segment* seg, int segs) {
    return detail::output_rows(s, seg, segs, image_stride);
  };
  detail::for_each_channel_vector(
      s, s.out_c, where, [&](std::int64_t o, std::int64_t p0, const auto& rows, Mask lanes) {
        const G* plane = gy + o * channel_stride;
        Vec cols[2][2];  // cols[j][i]: e[i][j], output row 2ty + i, column 2tx + j
#pragma GCC unroll 2
        for (int i = 0; i < 2; ++i) {
          PairRun<G> run;
          if (rows.count[i] == 1)  // long tile rows: one segment
            run = PairRun<G>(rows.lo[rows.seg[i][0]], rows.hi[rows.seg[i][0]], plane + rows.at[i][0]);
          else
            for (int n = 0; n < rows.count[i]; ++n)
              run.load(rows.lo[rows.seg[i][n]], rows.hi[rows.seg[i][n]], plane + rows.at[i][n]);
          run.split(cols[0][i], cols[1][i]);
        }
        Vec t[2][a];  // t[j][k] = (A e)[k][j]
        detail::apply_rows<Mx::A>(cols[0], t[0], std::make_integer_sequence<int, a>{});
        detail::apply_rows<Mx::A>(cols[1], t[1], std::make_integer_sequence<int, a>{});
        const auto out = e.at(o, p0);
#pragma GCC unroll 8
        for (int k = 0; k < a; ++k) {  // row k of (A e) A^T
          const Vec row[2] = {t[0][k], t[1][k]};
          Vec ek[a];
          detail::apply_rows<Mx::A>(row, ek, std::make_integer_sequence<int, a>{});
#pragma GCC unroll 8
          for (int l = 0; l < a; ++l) out.store(k * a + l, ek[l], lanes);
        }
      });
}

/// dU[xi] += E[xi] V[xi]^T for a group of images: the weight gradient of the transformed
/// filters (transform_weight_grad turns it into the filters'), in bfloat16 with `bf16`,
/// else in float32. V: the images' tiles as the forward pass transforms them; E: the
/// output gradient's (transform_output_grad; G as its gy). `v` and `e` (s.v_size() and
/// s.m_size() floats) are scratch; the sums run along the tiles, so one product per point
/// covers every image of the group.
template <int R, typename X, typename G>
void weight_grad(const Shape& s, const X* in, std::int64_t in_channel_stride, std::int64_t in_image_stride, const G* gy,
                 std::int64_t out_channel_stride, std::int64_t out_image_stride, float* v, float* e, bool bf16,
                 float* du) {
  const std::int64_t ld = s.padded_tiles(), tiles = s.tiles();
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512_BF16
  if (bf16) {
    // Both transforms round as they store: rows of pairs of tiles, k2 words a row, the
    // planes in the first half of v and e (a line apart more than their size, as the
    // float32 planes are: planes a multiple of 4 KiB apart would share cache sets). Each V
    // plane is then transposed into the second half of v (k2 rows of in_c pairs) and
    // dU[xi] += E[xi] V[xi]^T runs as gemm_rows, adding into dU: no sums across lanes,
    // which with sums of a few hundred tiles cost gemm_nt a quarter of its time in
    // bfloat16 (half as many steps along k as float32's).
    const std::int64_t k2 = (tiles + 1) / 2;
    const Bf16Rows v16{v, s.in_c * k2 + 16, 2 * k2}, e16{e, s.out_c * k2 + 16, 2 * k2};
    auto* const vt = reinterpret_cast<std::uint32_t*>(v + s.points() * v16.plane);
    transform_input<R>(s, in, in_channel_stride, in_image_stride, v16);
    transform_output_grad<R>(s, gy, out_channel_stride, out_image_stride, e16);
    v16.pad_rows(static_cast<int>(s.points()), s.in_c, tiles);
    e16.pad_rows(static_cast<int>(s.points()), s.out_c, tiles);
    for (int xi = 0; xi < s.points(); ++xi) {
      bf16::detail::transpose_words(s.in_c, k2, reinterpret_cast<const std::uint32_t*>(v16.row_of(xi, 0)), k2, vt,
                                    s.in_c);
      bf16::detail::gemm_rows_range(0, s.out_c, s.in_c, k2, reinterpret_cast<const std::uint32_t*>(e16.row_of(xi, 0)),
                                    k2, vt, s.in_c, du + xi * s.out_c * s.in_c, s.in_c, nullptr, false, true);
    }
    return;
  }
#else
  if (bf16) {  // the products take floats: both transforms round as they store, into their operands
    transform_input<R>(s, in, in_channel_stride, in_image_stride, RoundedF32Planes{v, s.v_plane(), ld});
    transform_output_grad<R>(s, gy, out_channel_stride, out_image_stride, RoundedF32Planes{e, s.m_plane(), ld});
    for (std::int64_t xi = 0; xi < s.points(); ++xi)
      bf16::gemm_nt(s.out_c, s.in_c, tiles, bf16::Operand{e + xi * s.m_plane(), ld},
                    bf16::Operand{v + xi * s.v_plane(), ld}, du + xi * s.out_c * s.in_c, s.in_c);
    return;
  }
#endif
  transform_input<R>(s, in, in_channel_stride, in_image_stride, F32Planes{v, s.v_plane(), ld});
  transform_output_grad<R>(s, gy, out_channel_stride, out_image_stride, F32Planes{e, s.m_plane(), ld});
  for (std::int64_t xi = 0; xi < s.points(); ++xi)
    gemm_nt(s.out_c, s.in_c, tiles, e + xi * s.m_plane(), ld, v + xi * s.v_plane(), ld, du + xi * s.out_c * s.in_c,
            s.in_c);
}

/// M[xi] = U[xi] V[xi] in bfloat16 (simd/bf16_products.inl): u16[xi] is U[xi] prepared as rows,
/// V[xi] the operand as the transform stored it (Bf16Pairs on AVX512-BF16, RoundedF32Planes
/// elsewhere).
inline void multiply_bf16(const Shape& s, const bf16::Operand* u16, const float* v, float* m, bool parallel) {
  const std::int64_t ld = s.padded_tiles(), tiles = s.tiles();
  auto one = [&](std::int64_t xi) {
    const bf16::Operand v16{v + xi * s.v_plane(), bf16::kNative ? tiles : ld};
    bf16::gemm_rows(s.out_c, tiles, s.in_c, u16[xi], v16, m + xi * s.m_plane(), ld);
  };
  if (parallel) {
    parallel_for(s.points(), 1, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t xi = lo; xi < hi; ++xi) one(xi);
    });
  } else {
    for (std::int64_t xi = 0; xi < s.points(); ++xi) one(xi);
  }
}

/// The convolution of a group: input tiles into v, products into m, outputs into out (see
/// transform_input, multiply and transform_output for the arguments). With `u16` (U's planes
/// prepared as bfloat16 operands) the products run in bfloat16.
template <int R, typename X, typename Y>
void convolve(const Shape& s, const float* u, const bf16::Operand* u16, const X* in, std::int64_t in_channel_stride,
              std::int64_t in_image_stride, float* v, float* m, const float* bias, bool relu, bool accumulate, Y* out,
              std::int64_t out_channel_stride, std::int64_t out_image_stride, bool parallel) {
  if (u16 != nullptr) {  // the tiles rounded as they are stored (on AVX512-BF16 paired along the channels)
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512_BF16
    const Bf16Pairs v16{v, s.v_plane(), s.tiles()};
    v16.pad_last_pair(static_cast<int>(s.points()), s.in_c, s.tiles());
#else
    const RoundedF32Planes v16{v, s.v_plane(), s.padded_tiles()};
#endif
    transform_input<R>(s, in, in_channel_stride, in_image_stride, v16);
  } else {
    transform_input<R>(s, in, in_channel_stride, in_image_stride, F32Planes{v, s.v_plane(), s.padded_tiles()});
  }
  if (u16 != nullptr)
    multiply_bf16(s, u16, v, m, parallel);
  else
    multiply(s, u, v, m, parallel);
  transform_output<R>(s, m, bias, relu, accumulate, out, out_channel_stride, out_image_stride);
}

#endif  // TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2

}  // namespace winograd
