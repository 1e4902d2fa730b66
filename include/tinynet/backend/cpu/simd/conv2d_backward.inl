/// \file
/// conv2d's gradients at one vector level (backend/cpu/conv2d.hpp's conv2d_backward): the
/// samples split into chunks run in parallel, each chunk's groups of samples side by side
/// in the column layout; the weight gradient through im2col's columns (gemm_nt, dot
/// products along the rows in place) or Winograd (16 multiplies per 2x2 output tile and
/// channel pair instead of 36, from the AVX-512 level up); the input
/// gradient as W^T times the output gradient's columns, gathered (stride 1, unpadded) or
/// added back by col2im, or through Winograd. Weight and bias gradients are summed per chunk
/// and then across chunks in a fixed order, so results do not depend on thread scheduling.
/// The columns and groups it shares with the forward pass: simd/conv2d.inl.

/// The adjoint of im2col: in[ci, iy, ix] += col[...] for every column entry that read it.
template <typename T>
void col2im_add(const Conv2dGeometry& g, const T* col, std::int64_t ld, T* in) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
  if constexpr (kVectorRuns<T>) {
    if (detail::stride2_rows(g)) return detail::col2im_stride2(g, col, ld, in);
  }
#endif
  for (std::int64_t ci = 0; ci < g.c; ++ci)
    for (std::int64_t i = 0; i < g.kh; ++i)
      for (std::int64_t j = 0; j < g.kw; ++j) {
        const T* row = col + ((ci * g.kh + i) * g.kw + j) * ld;
        T* plane = in + ci * g.h * g.w;
        std::int64_t x0, x1;
        detail::valid_columns(g, j, x0, x1);
        for (std::int64_t y = 0; y < g.oh; ++y) {
          const std::int64_t iy = y * g.sh - g.ph + i;
          if (iy < 0 || iy >= g.h) continue;
          const T* src = row + y * g.ow;
          T* dst = plane + iy * g.w + x0 * g.sw - g.pw + j;
          if (g.sw == 1)
            add_run(dst, src + x0, x1 - x0);
          else
            add_strided_run(dst, src + x0, g.sw, x1 - x0);
        }
      }
}

/// col2im for stride-1 unpadded convolutions, as a gather: in[ci, iy, ix] (+)= the sum
/// over (i, j) of col[(ci, i, j), (iy-i)*ow + ix-j] for the terms inside the output. Each
/// input row is summed in registers and stored once; scattering shifted rows instead
/// stalls on loads that overlap the previous (masked) stores. `accumulate` = false
/// overwrites `in`.
/// X: T, or at the AVX-512 level bfloat16 (rounded as stored).
template <typename T, typename X>
void col2im_gather(const Conv2dGeometry& g, const T* col, std::int64_t ld, X* in, bool accumulate) {
  for (std::int64_t ci = 0; ci < g.c; ++ci)
    for (std::int64_t iy = 0; iy < g.h; ++iy) {
      const std::int64_t i0 = std::max<std::int64_t>(0, iy - (g.oh - 1)), i1 = std::min(g.kh - 1, iy);
      X* dst = in + (ci * g.h + iy) * g.w;
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
      if constexpr (kVectorRuns<T>) {
        for (std::int64_t x0 = 0; x0 < g.w; x0 += kLanes) {
          const std::int64_t lanes_in = std::min<std::int64_t>(kLanes, g.w - x0);
          Vec acc = Vec::zero();
          for (std::int64_t i = i0; i <= i1; ++i) {
            const T* src = col + (ci * g.kh + i) * g.kw * ld + (iy - i) * g.ow + x0;
            for (std::int64_t j = 0; j < g.kw; ++j) {
              // Lanes l with 0 <= x0 + l - j < ow; the others are not loaded (no fault).
              const std::int64_t lo = std::max<std::int64_t>(0, j - x0), hi = std::min(lanes_in, j + g.ow - x0);
              if (hi <= lo) continue;
              acc = acc + Vec::load(src + j * ld - j, detail::lanes_between(lo, hi));
            }
          }
          const Mask out = detail::tail_mask(lanes_in);
          if (accumulate) acc = load_elems(dst + x0, out) + acc;
          store_elems(dst + x0, out, acc);
        }
        continue;
      }
#endif
      if constexpr (std::is_same_v<X, T>) {
        for (std::int64_t ix = 0; ix < g.w; ++ix) {
          T acc = 0;
          for (std::int64_t i = i0; i <= i1; ++i)
            for (std::int64_t j = std::max<std::int64_t>(0, ix - (g.ow - 1)); j <= std::min(g.kw - 1, ix); ++j)
              acc += col[((ci * g.kh + i) * g.kw + j) * ld + (iy - i) * g.ow + ix - j];
          dst[ix] = accumulate ? dst[ix] + acc : acc;
        }
      }
    }
}

namespace detail {

/// Whether an output gradient that arrived as Y is its products' operand as it stands in
/// float columns: it arrived in bfloat16 (so its values are bfloat16 already) and the
/// products take floats, with no rounding pass.
template <typename Y>
inline constexpr bool kGyColumnsRounded = !bf16::kNative && std::is_same_v<Y, bfloat16>;

/// dw += gy_cols col^T ([out_c, ld] times [kdim, ld]^T) for the group of `count` samples
/// at xs, their columns copied out to `col` first: for float32 with vectors as dot
/// products along the rows in place (gemm_nt; a packed GEMM copies both operands again),
/// otherwise through Eigen. With `gy_bf16` (a buffer for the output gradient's bfloat16
/// operand) in bfloat16: the columns made in bfloat16 (bf16_columns), or where the products
/// take floats from the input rounded or, a bfloat16 input (X), widened (rounded_columns);
/// with vdpbf16ps a bfloat16 input takes the former. Y, the output gradient's type as it arrived: where it was bfloat16
/// its float columns hold bfloat16 values already, the operand itself where the products take floats.
template <typename Y, typename T, typename X>
void add_weight_grad(const Conv2dGeometry& g, const T* gy_cols, const X* xs, std::int64_t count, T* col,
                     std::int64_t ld, T* dw, T* gy_bf16) {
  const std::int64_t kdim = g.col_rows();
  if constexpr (std::is_same_v<T, float>) {
#if TINYNET_ISA_LEVEL == TINYNET_ISA_AVX2
    // At AVX2 (measured there; AVX-512 takes Winograd's weight gradient for the wide
    // layers) from the input's rows shifted in place: no columns to copy.
    if (same_padded_shape(g) && g.plain())
      return shifted_rows::weight_grad(g, gy_cols, ld, xs, count, gy_bf16 != nullptr && std::is_same_v<X, float>,
                                       gy_bf16 != nullptr && !kGyColumnsRounded<Y>, col, dw);
#endif
    if (gy_bf16 != nullptr) {
      const bf16::Operand gy16 =
          kGyColumnsRounded<Y> ? bf16::Operand{gy_cols, ld} : bf16::rows(g.out_c, ld, gy_cols, ld, gy_bf16);
      if (bf16_columns(g, count, ld))
        return bf16::gemm_nt(g.out_c, kdim, ld, gy16, im2col_bf16(g, xs, count, col, ld), dw, kdim);
#if TINYNET_ISA_LEVEL < TINYNET_ISA_AVX512_BF16
      return bf16::gemm_nt(g.out_c, kdim, ld, gy16, rounded_columns(g, xs, count, col, ld), dw, kdim);
#else
      if constexpr (std::is_same_v<X, T>) {
        im2col_group(g, xs, count, col, ld);
        return bf16::gemm_nt(g.out_c, kdim, ld, gy16, bf16::rows(kdim, ld, col, ld, col), dw, kdim);
      }
#endif
    }
  }
  if constexpr (std::is_same_v<X, T>) {  // (a bfloat16 input comes with bfloat16 products: above)
    im2col_group(g, xs, count, col, ld);
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
    if constexpr (std::is_same_v<T, float>) return gemm_nt(g.out_c, kdim, ld, gy_cols, ld, col, ld, dw, kdim);
#endif
    gemm<T>(false, true, g.out_c, kdim, ld, T(1), gy_cols, ld, col, ld, T(1), dw, kdim, false);
  }
}

/// dcol = W^T gy_cols ([kdim, out_c] times [out_c, ld]), from w_t = W^T for float32
/// (gemm_rows), or with `bf16_products` from W's bfloat16 operand w16 and gy_cols rounded
/// inside the product (taken as it is where Y, the type it arrived in, was bfloat16 and the
/// products take floats), or through Eigen.
template <typename Y, typename T>
void input_grad_columns(const Conv2dGeometry& g, const T* w, [[maybe_unused]] const T* w_t, const bf16::Operand& w16,
                        const T* gy_cols, std::int64_t ld, [[maybe_unused]] bool bf16_products, T* dcol,
                        bool parallel) {
  const std::int64_t kdim = g.col_rows();
  if constexpr (std::is_same_v<T, float>) {
    if (kGyColumnsRounded<Y> && bf16_products)
      return bf16::gemm_rows(kdim, ld, g.out_c, w16, bf16::Operand{gy_cols, ld}, dcol, ld, nullptr, false, parallel);
    if (bf16_products) return bf16::gemm_rows_rounding_b(kdim, ld, g.out_c, w16, gy_cols, ld, dcol, ld, parallel);
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
    return gemm_rows(kdim, ld, g.out_c, w_t, g.out_c, gy_cols, ld, dcol, ld, nullptr, false, parallel);
#endif
  }
  gemm<T>(true, false, kdim, ld, g.out_c, T(1), w, kdim, gy_cols, ld, T(0), dcol, ld, parallel);
}

/// conv2d_backward's arguments (backend/cpu/conv2d.hpp), as one value its passes share.
template <typename T, typename X, typename Y>
struct BackwardArgs {
  const X* x;
  const T* w;
  const Y* gy;
  X* dx;
  bool acc_dx;
  T* dw;
  bool acc_dw;
  T* db;
  bool acc_db;
  T* scratch;
  const Y* y_relu;
};

/// What conv2d_backward's passes share: the chunks, which strategy each gradient takes, and
/// where the filters' operands lie in scratch (after the chunks).
template <typename T>
struct BackwardPlan {
  std::int64_t chunks, per_chunk, out_hw, kdim, cols, wsize;
  std::int64_t partials;  // offset of a chunk's dw_part (then db_part) within its scratch
  bool bf16;              // bfloat16 products
  bool winograd_dx;       // the input gradient through Winograd, its filters transformed once
  bool winograd_dw;       // the weight gradient through Winograd
  std::int64_t group;     // samples side by side in a chunk's columns
  bool direct;            // gy is the column layout already (one sample, no ReLU, not bfloat16)
  T* u_dx;                // Winograd's filters for dx, or W^T for gemm_rows
  T* w_bf16;              // with bfloat16 products: the filters' operand(s)
  T* gy_bf16;             // then each chunk's output gradient's
  // At the amx level, with bfloat16 products: the input gradient as a direct convolution on
  // tiles (simd/amx_conv3x3.inl), its filters prepared there once; else null.
  const std::uint16_t* direct_dx = nullptr;
  bool direct_dw = false;  // and the weight gradient so (winograd_dw false then)
};

template <typename T, typename X, typename Y>
BackwardPlan<T> backward_plan(const Conv2dGeometry& g, const BackwardArgs<T, X, Y>& a, Products products) {
  BackwardPlan<T> p;
  p.chunks = conv_chunks(g.n);
  p.per_chunk = conv2d_backward_scratch_per_chunk(g);
  p.out_hw = g.oh * g.ow;
  p.kdim = g.col_rows();
  p.cols = g.col_cols();
  p.wsize = g.out_c * p.kdim;
  p.partials = p.per_chunk - p.wsize - g.out_c;
  p.bf16 = std::is_same_v<T, float> && products == Products::bfloat16;
  p.winograd_dx = uses_winograd<T>(Level{}, g) && a.dx != nullptr;
  // At the AVX2 level im2col's weight gradient is as fast in float32 (docs/performance.md),
  // and faster with bfloat16 products, whose columns it makes from the input rounded once.
  p.winograd_dw = uses_winograd<T>(Level{}, g) && a.dw != nullptr && TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512;
  p.group = p.winograd_dw ? backward_group(g) : cpu_group(g);  // im2col's: one group fills the columns
  p.direct = p.group == 1 && a.y_relu == nullptr && std::is_same_v<Y, T>;
  p.u_dx = a.scratch + p.chunks * p.per_chunk;
  p.w_bf16 = p.u_dx + conv2d_backward_filters(g);
  p.gy_bf16 = p.w_bf16 + conv2d_backward_bf16_weights(g);
  return p;
}

/// The input gradient's filters: Winograd's, transformed for the flipped convolution, or W^T
/// ([kdim, out_c]) for gemm_rows; with bfloat16 products also as bfloat16 operands (w16).
template <typename T>
void input_grad_filters(const Conv2dGeometry& g, const BackwardPlan<T>& p, const T* w, bool needed,
                        bf16::Operand (&w16)[16]) {
  if (p.direct_dx != nullptr) return;
  if constexpr (std::is_same_v<T, float>) {
    if (p.winograd_dx) {
      winograd::transform_weights<3>(w, g.out_c, g.c, true, p.u_dx);
      if (p.bf16)
        for (int xi = 0; xi < 16; ++xi)
          w16[xi] = bf16::rows(g.c, g.out_c, p.u_dx + xi * g.c * g.out_c, g.out_c,
                               p.w_bf16 + xi * bf16_operand_floats(g.c, g.out_c));
      return;
    }
    if (needed && (p.bf16 || TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2)) {
      for (std::int64_t o = 0; o < g.out_c; ++o)
        for (std::int64_t r = 0; r < p.kdim; ++r) p.u_dx[r * g.out_c + o] = w[o * p.kdim + r];
      if (p.bf16) w16[0] = bf16::rows(p.kdim, g.out_c, p.u_dx, g.out_c, p.w_bf16);
    }
  }
}

/// A chunk's scratch, and the group of samples it works on.
template <typename T>
struct ChunkGroup {
  T* col;      // the columns (im2col's weight gradient), or Winograd's dU then a group's tiles
  T* dcol;     // the input gradient's columns or Winograd's planes
  T* gy_cols;  // the output gradient in the column layout
  T* dw_part;  // the chunk's weight gradient
  T* db_part;  // and bias gradient
  T* gy16;     // with bfloat16 products: the output gradient's operand
  std::int64_t first, count, ld;
};

template <typename T>
ChunkGroup<T> chunk_group(const Conv2dGeometry& g, const BackwardPlan<T>& p, T* scratch, std::int64_t ch) {
  ChunkGroup<T> c;
  c.col = scratch + ch * p.per_chunk;
  c.dcol = c.col + conv2d_backward_dw_scratch(g);
  c.gy_cols = c.dcol + conv2d_backward_dx_scratch(g);
  c.dw_part = c.col + p.partials;
  c.db_part = c.dw_part + p.wsize;
  c.gy16 = p.bf16 ? p.gy_bf16 + ch * conv2d_backward_bf16_per_chunk(g) : nullptr;
  c.first = c.count = c.ld = 0;
  return c;
}

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
/// A bfloat16 output gradient masked straight into bfloat16 where every pass after it reads
/// bfloat16 (the bias's sums from the same values): a first layer's weight gradient through
/// bfloat16 columns (gemm_nt's rows, padded to pairs), or Winograd's transforms (the
/// columns' layout). No float32 columns to write and read back. False where it does not apply.
template <typename X>
bool backward_masked_bf16(const Conv2dGeometry& g, const BackwardPlan<float>& p,
                          const BackwardArgs<float, X, bfloat16>& a, const bf16::Operand (&w16)[16],
                          const ChunkGroup<float>& c) {
  const bool rows16 =
      p.bf16 && a.dx == nullptr && a.dw != nullptr && !p.winograd_dw && !p.direct_dw && bf16_columns(g, c.count, c.ld);
  const bool winograd16 = p.bf16 && (p.winograd_dw || p.winograd_dx || p.direct_dw);
  if (!rows16 && !winograd16) return false;
  const std::int64_t ld16 = rows16 ? (c.ld + 1) / 2 * 2 : c.ld, at0 = c.first * g.out_c * p.out_hw;
  auto* gy_masked = reinterpret_cast<bfloat16*>(rows16 ? c.gy16 : c.gy_cols);
  for (std::int64_t o = 0; o < g.out_c; ++o) {
    Vec sums = Vec::zero();
    for (std::int64_t j = 0; j < c.count; ++j) {
      const std::int64_t at = (j * g.out_c + o) * p.out_hw;
      sums = sums + relu_grad_run_sums(gy_masked + o * ld16 + j * p.cols, a.gy + at0 + at,
                                       a.y_relu != nullptr ? a.y_relu + at0 + at : nullptr, p.out_hw);
    }
    if (ld16 != c.ld) gy_masked[o * ld16 + c.ld] = bfloat16(0.0f);  // gemm_nt reads rows in pairs
    if (a.db != nullptr) c.db_part[o] += sum(sums);
  }
  const X* xs = a.x + c.first * g.c * g.h * g.w;
  if (rows16) {
    bf16::gemm_nt(g.out_c, p.kdim, c.ld, bf16::Operand{c.gy16, ld16}, im2col_bf16(g, xs, c.count, c.col, c.ld),
                  c.dw_part, p.kdim);
    return true;
  }
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AMX
  if (p.direct_dw)
    conv3x3::weight_grad<tile::Hardware>(g, c.count, conv3x3::Input<X>{xs, g.h * g.w, g.c * g.h * g.w},
                                         conv3x3::Input<bfloat16>{gy_masked, c.ld, p.cols}, c.dw_part);
#endif
  if (p.winograd_dw) {
    const winograd::Shape s = winograd_forward(g, c.count);
    float* v = c.col + s.u_size();  // after the chunk's dU
    winograd::weight_grad<3>(s, xs, g.h * g.w, g.c * g.h * g.w, gy_masked, c.ld, p.cols, v, v + s.v_size(), true,
                             c.col);
  }
  if (p.winograd_dx) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AMX
    if (p.direct_dx != nullptr) {
      conv3x3::input_grad<tile::Hardware>(g, c.count, conv3x3::Input<bfloat16>{gy_masked, c.ld, p.cols}, p.direct_dx,
                                          a.acc_dx, a.dx + c.first * g.c * g.h * g.w);
      return true;
    }
#endif
    const winograd::Shape s = winograd_input_grad(g, c.count);
    winograd::convolve<3>(s, p.u_dx, w16, gy_masked, c.ld, p.cols, c.dcol, c.dcol + s.v_size(), nullptr, false,
                          a.acc_dx, a.dx + c.first * g.c * g.h * g.w, g.h * g.w, g.c * g.h * g.w, p.chunks == 1);
  }
  return true;
}
#endif

/// The group's output gradient in the column layout (samples side by side and/or masked by
/// the fused ReLU, and float), or gy itself where it already is (`direct`).
template <typename T, typename X, typename Y>
const T* output_grad_columns(const Conv2dGeometry& g, const BackwardPlan<T>& p, const BackwardArgs<T, X, Y>& a,
                             const ChunkGroup<T>& c) {
  const Y* gys = a.gy + c.first * g.out_c * p.out_hw;
  if constexpr (std::is_same_v<Y, T>) {
    if (p.direct) return gys;
  }
  for (std::int64_t j = 0; j < c.count; ++j)
    for (std::int64_t o = 0; o < g.out_c; ++o) {
      T* dst = c.gy_cols + o * c.ld + j * p.cols;
      const std::int64_t at = (j * g.out_c + o) * p.out_hw;
      if (a.y_relu != nullptr)
        relu_grad_run(dst, gys + at, a.y_relu + c.first * g.out_c * p.out_hw + at, p.out_hw);
      else
        copy_run(dst, gys + at, p.out_hw);
    }
  return c.gy_cols;
}

/// The group's weight gradient (into the chunk's dU through Winograd, else its dw_part) and
/// bias gradient, from its output gradient's columns gyc.
template <typename T, typename X, typename Y>
void weight_grad_group(const Conv2dGeometry& g, const BackwardPlan<T>& p, const BackwardArgs<T, X, Y>& a,
                       const ChunkGroup<T>& c, const T* gyc) {
  const X* xs = a.x + c.first * g.c * g.h * g.w;
  if (p.winograd_dw) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
    if constexpr (kWinogradFloat<T>) {  // from gyc, masked and in cache
      const winograd::Shape s = winograd_forward(g, c.count);
      T* v = c.col + s.u_size();
      winograd::weight_grad<3>(s, xs, g.h * g.w, g.c * g.h * g.w, gyc, c.ld, p.cols, v, v + s.v_size(), p.bf16, c.col);
    }
#endif
  } else if (a.dw != nullptr) {
    add_weight_grad<Y>(g, gyc, xs, c.count, c.col, c.ld, c.dw_part, c.gy16);
  }
  if (a.db != nullptr)
    for (std::int64_t o = 0; o < g.out_c; ++o) c.db_part[o] += sum_run(gyc + o * c.ld, c.ld);
}

/// The group's input gradient from its output gradient's columns gyc: through Winograd, or
/// W^T gyc into columns that col2im adds (or gathers) into dx.
template <typename T, typename X, typename Y>
void input_grad_group(const Conv2dGeometry& g, const BackwardPlan<T>& p, const BackwardArgs<T, X, Y>& a,
                      const bf16::Operand (&w16)[16], const ChunkGroup<T>& c, const T* gyc) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
  if constexpr (kWinogradFloat<T>) {
    if (p.winograd_dx) {  // gyc holds sample j's channel o at gyc + o * ld + j * cols
      const winograd::Shape s = winograd_input_grad(g, c.count);
      return winograd::convolve<3>(s, p.u_dx, p.bf16 ? w16 : nullptr, gyc, c.ld, p.cols, c.dcol, c.dcol + s.v_size(),
                                   nullptr, false, a.acc_dx, a.dx + c.first * g.c * g.h * g.w, g.h * g.w,
                                   g.c * g.h * g.w, p.chunks == 1);
    }
  }
#endif
  if (a.dx == nullptr) return;
  input_grad_columns<Y>(g, a.w, p.u_dx, w16[0], gyc, c.ld, p.bf16, c.dcol, p.chunks == 1);
  for (std::int64_t j = 0; j < c.count; ++j) {
    X* dxs = a.dx + (c.first + j) * g.c * g.h * g.w;
    if (g.stride1_unpadded()) {
      col2im_gather(g, c.dcol + j * p.cols, c.ld, dxs, a.acc_dx);
      continue;
    }
    if constexpr (std::is_same_v<X, T>) {  // (a bfloat16 dx: only gathered)
      if (!a.acc_dx) std::fill(dxs, dxs + g.c * g.h * g.w, T(0));
      col2im_add(g, c.dcol + j * p.cols, c.ld, dxs);
    }
  }
}

/// dst[i] (+)= the chunks' partials src[ch * stride + i], in a fixed order: deterministic
/// for a given thread count.
template <typename T>
void sum_chunks(std::int64_t chunks, T* dst, bool acc, const T* src, std::int64_t stride, std::int64_t len) {
  for (std::int64_t i = 0; i < len; ++i) {
    T total = acc ? dst[i] : T(0);
    for (std::int64_t ch = 0; ch < chunks; ++ch) total += src[ch * stride + i];
    dst[i] = total;
  }
}

/// dw and db from the chunks' partials (through Winograd: the chunks' dU summed into the
/// first's, then transformed into dw).
template <typename T, typename X, typename Y>
void sum_weight_grads(const Conv2dGeometry& g, const BackwardPlan<T>& p, const BackwardArgs<T, X, Y>& a) {
  if (a.dw != nullptr && !p.winograd_dw)
    sum_chunks(p.chunks, a.dw, a.acc_dw, a.scratch + p.partials, p.per_chunk, p.wsize);
  if (a.db != nullptr) sum_chunks(p.chunks, a.db, a.acc_db, a.scratch + p.partials + p.wsize, p.per_chunk, g.out_c);
  if constexpr (std::is_same_v<T, float>) {
    if (p.winograd_dw) {
      sum_chunks(p.chunks, a.scratch, false, a.scratch, p.per_chunk, winograd_forward(g, 1).u_size());
      winograd::transform_weight_grad<3>(a.scratch, g.out_c, g.c, a.acc_dw, a.dw);
    }
  }
}

}  // namespace detail

/// conv2d_backward at this level (backend/cpu/conv2d.hpp): the plan and the filters, then in
/// each chunk, group by group, the output gradient's columns, the weight and bias gradients'
/// partials and the input gradient; then the partials summed. X (x and dx), Y (gy and
/// y_relu): as conv2d_forward's.
template <typename T, typename X, typename Y>
void conv2d_backward(Level, const Conv2dGeometry& g, const X* x, const T* w, const Y* gy, X* dx, bool acc_dx, T* dw,
                     bool acc_dw, T* db, bool acc_db, T* scratch, const Y* y_relu, Products products) {
  const detail::BackwardArgs<T, X, Y> a{x, w, gy, dx, acc_dx, dw, acc_dw, db, acc_db, scratch, y_relu};
  detail::BackwardPlan<T> p = detail::backward_plan(g, a, products);
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AMX
  constexpr bool kDirectTypes = std::is_same_v<T, float> && std::is_same_v<Y, bfloat16>;
  const bool direct_dx = kDirectTypes && p.bf16 && p.winograd_dx && conv3x3::fits(g);
  Scratch<std::uint16_t> direct_filters(direct_dx ? conv3x3::filter_words(conv3x3::input_grad_geometry(g)) : 0);
  if constexpr (kDirectTypes) {
    if (direct_dx) {
      conv3x3::prepare_input_grad_filters(g, w, direct_filters.data());
      p.direct_dx = direct_filters.data();
    }
    if (p.bf16 && p.winograd_dw && conv3x3::fits(g)) {
      p.direct_dw = true;
      p.winograd_dw = false;
    }
  }
#endif
  bf16::Operand w16[16];
  detail::input_grad_filters(g, p, w, dx != nullptr, w16);
  parallel_for(p.chunks, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t ch = lo; ch < hi; ++ch) {
      detail::ChunkGroup<T> c = detail::chunk_group(g, p, scratch, ch);
      std::fill(c.dw_part, c.dw_part + p.wsize + g.out_c, T(0));
      if (p.winograd_dw) std::fill(c.col, c.col + winograd_forward(g, 1).u_size(), T(0));  // the chunk's dU
      detail::for_each_group(g, p.group, ch, p.chunks, [&](std::int64_t first, std::int64_t count) {
        c.first = first;
        c.count = count;
        c.ld = count * p.cols;
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
        if constexpr (std::is_same_v<Y, bfloat16> && std::is_same_v<T, float>) {
          if (detail::backward_masked_bf16(g, p, a, w16, c)) return;
        }
#endif
        const T* gyc = detail::output_grad_columns(g, p, a, c);
        detail::weight_grad_group(g, p, a, c, gyc);
        detail::input_grad_group(g, p, a, w16, c, gyc);
      });
    }
  });
  detail::sum_weight_grads(g, p, a);
}
