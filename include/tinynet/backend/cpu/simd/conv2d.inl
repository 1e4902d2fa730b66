/// \file
/// conv2d kernels at one vector level (NCHW): im2col + GEMM per sample (or per group of samples side by side
/// when outputs are small), samples split into a fixed number of chunks run in parallel.
/// Stride-1 3x3 convolutions with enough channels take Winograd F(2x2, 3x3) instead for
/// the output and both gradients (the weight gradient, 16 multiplies per 2x2 output tile
/// and channel pair instead of 36, with AVX-512 or bfloat16 products), and the output of
/// one-channel layers comes from a direct kernel (float32 at the AVX2 and AVX-512 levels;
/// simd/winograd.inl, simd/conv2d_one_channel.inl).
/// Weight and bias gradients are summed per chunk and then across chunks in a fixed
/// order, so results do not depend on thread scheduling.
///
/// With bfloat16 products (autocast, float32 only) every GEMM, Winograd's included, takes
/// bfloat16 operands (simd/bf16.inl): the filters are prepared once per call, the columns,
/// Winograd's tiles and the output gradient in each chunk. With AVX512-BF16 the forward's
/// columns are copied from the input rounded once into pairs of channels
/// (paired_columns), and the direct one-channel kernel multiplies pairs of taps
/// (one_channel::forward_bf16); elsewhere it runs on rounded copies of the image and filters.
///
/// Under autocast at the AVX-512 level the activations are bfloat16 (conv2d_takes_bf16):
/// every path rounds the output as it stores it, and the backward reads the output gradient
/// (and a fused ReLU's output) in the masked copy that makes its float32 columns; a
/// bfloat16 input is read as it is where the path allows.

/// The Winograd and one-channel kernels exist for float32 at the AVX2 and AVX-512 levels.
template <typename T>
inline constexpr bool kWinogradFloat = std::is_same_v<T, float>&& TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2;
template <typename T>
inline constexpr bool kOneChannelFloat = kWinogradFloat<T>;

/// Whether the kernels for T take the Winograd path for g.
template <typename T>
bool uses_winograd(Level, const Conv2dGeometry& g) {
  return kWinogradFloat<T> && winograd_shape(g);
}

/// Whether the kernels for T take the direct one-channel path for g's output.
template <typename T>
bool uses_one_channel(Level, const Conv2dGeometry& g) {
  return kOneChannelFloat<T> && one_channel_shape(g);
}

/// Whether the kernels here take bfloat16 activations for g under autocast (the
/// backend/cpu/conv2d.hpp entry of the same name): outputs at the AVX-512 level; inputs
/// where each pass reads and writes them as they are: Winograd's transforms, or columns of
/// channel pairs forward and bfloat16 columns for the weight gradient, with a gathered
/// input gradient (stride 1, unpadded). T: the parameters' type (float32 only).
template <typename T>
bool conv2d_takes_bf16(Level, const Conv2dGeometry& g, bool input);

namespace detail {

/// The output columns x whose input column x*sw - pw + j lies inside [0, w): [x0, x1).
inline void valid_columns(const Conv2dGeometry& g, std::int64_t j, std::int64_t& x0, std::int64_t& x1) {
  x0 = std::min(g.ow, std::max<std::int64_t>(0, (g.pw - j + g.sw - 1) / g.sw));
  x1 = std::max(x0, std::min(g.ow, (g.w + g.pw - j + g.sw - 1) / g.sw));
}

}  // namespace detail

/// col[(ci*kh + i)*kw + j, y*ow + x] = input[ci, y*sh - ph + i, x*sw - pw + j] (0 outside).
/// `ld`: the distance between rows of col (col_cols() for one sample; more when samples
/// sit side by side).
template <typename T>
void im2col(const Conv2dGeometry& g, const T* in, T* col, std::int64_t ld) {
  if (g.stride1_unpadded()) {
    for (std::int64_t ci = 0; ci < g.c; ++ci)
      for (std::int64_t i = 0; i < g.kh; ++i)
        for (std::int64_t j = 0; j < g.kw; ++j)
          pack_rows(col + ((ci * g.kh + i) * g.kw + j) * ld, in + ci * g.h * g.w + i * g.w + j, g.w, g.oh, g.ow);
    return;
  }
  for (std::int64_t ci = 0; ci < g.c; ++ci)
    for (std::int64_t i = 0; i < g.kh; ++i)
      for (std::int64_t j = 0; j < g.kw; ++j) {
        T* row = col + ((ci * g.kh + i) * g.kw + j) * ld;
        const T* plane = in + ci * g.h * g.w;
        std::int64_t x0, x1;
        detail::valid_columns(g, j, x0, x1);
        for (std::int64_t y = 0; y < g.oh; ++y) {
          const std::int64_t iy = y * g.sh - g.ph + i;
          T* out = row + y * g.ow;
          if (iy < 0 || iy >= g.h) {
            fill_run(out, T(0), g.ow);
            continue;
          }
          const T* src = plane + iy * g.w + x0 * g.sw - g.pw + j;
          fill_run(out, T(0), x0);
          if (g.sw == 1) {
            copy_run(out + x0, src, x1 - x0);
          } else {
            for (std::int64_t x = x0; x < x1; ++x) out[x] = src[(x - x0) * g.sw];
          }
          fill_run(out + x1, T(0), g.ow - x1);
        }
      }
}

/// The adjoint of im2col: in[ci, iy, ix] += col[...] for every column entry that read it.
template <typename T>
void col2im_add(const Conv2dGeometry& g, const T* col, std::int64_t ld, T* in) {
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
          if (g.sw == 1) {
            add_run(dst, src + x0, x1 - x0);
          } else {
            for (std::int64_t x = x0; x < x1; ++x) dst[(x - x0) * g.sw] += src[x];
          }
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

/// im2col for `count` samples from xs side by side: sample j's columns start at col + j * cols.
template <typename T>
void im2col_group(const Conv2dGeometry& g, const T* xs, std::int64_t count, T* col, std::int64_t ld) {
  for (std::int64_t j = 0; j < count; ++j) im2col(g, xs + j * g.c * g.h * g.w, col + j * g.col_cols(), ld);
}

/// With vdpbf16ps and a stride-1 unpadded convolution, the weight gradient's columns can be
/// bfloat16 from the start: the group's input rounded once (after the columns in their
/// buffer of kdim * ld floats), then im2col over 16-bit words writes the rows operand at
/// half the bytes, and no pass rounds the columns.
inline bool bf16_columns(const Conv2dGeometry& g, std::int64_t count, std::int64_t ld) {
  const std::int64_t ld16 = (ld + 1) / 2 * 2, input = count * g.c * g.h * g.w;
  return bf16::kNative && g.stride1_unpadded() && g.col_rows() * ld16 + (input + 1) / 2 * 2 <= 2 * g.col_rows() * ld;
}

/// The columns of bf16_columns as the rows operand, in col (from a bfloat16 input as it is).
template <typename X>
bf16::Operand im2col_bf16([[maybe_unused]] const Conv2dGeometry& g, [[maybe_unused]] const X* xs,
                          [[maybe_unused]] std::int64_t count, float* col, std::int64_t ld) {
  const std::int64_t ld16 = (ld + 1) / 2 * 2;
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512_BF16
  const std::int64_t kdim = g.col_rows();
  auto* col16 = reinterpret_cast<std::uint16_t*>(col);
  const std::uint16_t* x16 = nullptr;
  if constexpr (std::is_same_v<X, bfloat16>)
    x16 = reinterpret_cast<const std::uint16_t*>(xs);
  else
    x16 = static_cast<const std::uint16_t*>(bf16::rows(1, count * g.c * g.h * g.w, xs, 0, col + kdim * ld16 / 2).data);
  im2col_group(g, x16, count, col16, ld16);
  if (ld % 2 != 0)  // gemm_nt reads rows in pairs
    for (std::int64_t r = 0; r < kdim; ++r) col16[r * ld16 + ld] = 0;
#endif
  return {col, ld16};
}

/// dw += gy_cols col^T ([out_c, ld] times [kdim, ld]^T) for the group of `count` samples
/// at xs, their columns copied out to `col` first: for float32 with vectors as dot
/// products along the rows in place (gemm_nt; a packed GEMM copies both operands again),
/// otherwise through Eigen. With `gy_bf16` (a buffer for the output gradient's bfloat16
/// operand) in bfloat16: the columns made in bfloat16 (bf16_columns) or rounded in place; a
/// bfloat16 input (X) only the former.
template <typename T, typename X>
void add_weight_grad(const Conv2dGeometry& g, const T* gy_cols, const X* xs, std::int64_t count, T* col,
                     std::int64_t ld, T* dw, T* gy_bf16) {
  const std::int64_t kdim = g.col_rows();
  if constexpr (std::is_same_v<T, float>) {
    if (gy_bf16 != nullptr) {
      const bf16::Operand gy16 = bf16::rows(g.out_c, ld, gy_cols, ld, gy_bf16);
      if (bf16_columns(g, count, ld))
        return bf16::gemm_nt(g.out_c, kdim, ld, gy16, im2col_bf16(g, xs, count, col, ld), dw, kdim);
      if constexpr (std::is_same_v<X, T>) {
        im2col_group(g, xs, count, col, ld);
        return bf16::gemm_nt(g.out_c, kdim, ld, gy16, bf16::rows(kdim, ld, col, ld, col), dw, kdim);
      }
    }
  }
  if constexpr (std::is_same_v<X, T>) {  // (a bfloat16 input takes bf16_columns: conv2d_takes_bf16)
    im2col_group(g, xs, count, col, ld);
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
    if constexpr (std::is_same_v<T, float>) return gemm_nt(g.out_c, kdim, ld, gy_cols, ld, col, ld, dw, kdim);
#endif
    gemm<T>(false, true, g.out_c, kdim, ld, T(1), gy_cols, ld, col, ld, T(1), dw, kdim, false);
  }
}

/// dcol = W^T gy_cols ([kdim, out_c] times [out_c, ld]), from w_t = W^T for float32
/// (gemm_rows), or with `bf16_products` from W's bfloat16 operand w16 and gy_cols rounded
/// inside the product, or through Eigen.
template <typename T>
void input_grad_columns(const Conv2dGeometry& g, const T* w, [[maybe_unused]] const T* w_t, const bf16::Operand& w16,
                        const T* gy_cols, std::int64_t ld, [[maybe_unused]] bool bf16_products, T* dcol,
                        bool parallel) {
  const std::int64_t kdim = g.col_rows();
  if constexpr (std::is_same_v<T, float>) {
    if (bf16_products) return bf16::gemm_rows_rounding_b(kdim, ld, g.out_c, w16, gy_cols, ld, dcol, ld, parallel);
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
    return gemm_rows(kdim, ld, g.out_c, w_t, g.out_c, gy_cols, ld, dcol, ld, nullptr, false, parallel);
#endif
  }
  gemm<T>(true, false, kdim, ld, g.out_c, T(1), w, kdim, gy_cols, ld, T(0), dcol, ld, parallel);
}

/// With vdpbf16ps, the forward's columns can come from the input rounded once into pairs of
/// channels (bf16::channel_pairs): im2col over the pairs, as 32-bit elements, writes
/// gemm_rows' right operand at half the bytes of float columns, and no pass rounds them.
/// The product's k then runs over (channel pair, i, j, channel in the pair), so the filters
/// are reordered to match (paired_filters). Needs an even channel count, and room for a
/// group's paired input in the second half of its columns' buffer.
inline bool paired_columns(const Conv2dGeometry& g) {
  return bf16::kNative && g.c % 2 == 0 && g.h * g.w <= g.kh * g.kw * g.oh * g.ow &&
         g.out_c * g.col_rows() <= conv2d_forward_scratch_per_chunk(g);
}

/// The filters as paired_columns' left operand, in w16 (the bfloat16 filters' buffer),
/// reordered in tmp (out_c * c * kh * kw floats).
inline bf16::Operand paired_filters(const Conv2dGeometry& g, const float* w, float* tmp, float* w16) {
  const std::int64_t kk = g.kh * g.kw, kdim = g.col_rows();
  for (std::int64_t o = 0; o < g.out_c; ++o)
    for (std::int64_t ci = 0; ci < g.c; ++ci)
      for (std::int64_t t = 0; t < kk; ++t)
        tmp[o * kdim + ((ci / 2) * kk + t) * 2 + ci % 2] = w[(o * g.c + ci) * kk + t];
  return bf16::rows(g.out_c, kdim, tmp, kdim, w16);
}

/// Calls body(first, count) for consecutive groups of at most `group` samples covering
/// chunk `ch` of `chunks`.
template <typename Body>
void for_each_group(const Conv2dGeometry& g, std::int64_t group, std::int64_t ch, std::int64_t chunks, Body&& body) {
  const std::int64_t end = (ch + 1) * g.n / chunks;
  for (std::int64_t s = ch * g.n / chunks; s < end; s += group) body(s, std::min(group, end - s));
}

}  // namespace detail

template <typename T>
bool conv2d_takes_bf16(Level, [[maybe_unused]] const Conv2dGeometry& g, [[maybe_unused]] bool input) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
  if (!std::is_same_v<T, float>) return false;
  if (!input || uses_winograd<float>(Level{}, g)) return true;
  if (uses_one_channel<float>(Level{}, g) || !g.stride1_unpadded() || !detail::paired_columns(g)) return false;
  for (std::int64_t count = 1; count <= cpu_group(g); ++count)
    if (!detail::bf16_columns(g, count, count * g.col_cols())) return false;
  return true;
#else
  return false;
#endif
}

/// conv2d_forward at this level (backend/cpu/conv2d.hpp). X, Y: T, or at the AVX-512 level
/// for float32 under autocast bfloat16 (activations; where conv2d_takes_bf16 says so).
template <typename T, typename X, typename Y>
void conv2d_forward(Level, const Conv2dGeometry& g, const X* x, const T* w, const T* b, Y* y, T* scratch, bool relu,
                    Products products) {
  const std::int64_t chunks = conv_chunks(g.n), out_hw = g.oh * g.ow, cols = g.col_cols(), kdim = g.col_rows();
  const std::int64_t per_chunk = conv2d_forward_scratch_per_chunk(g);
  // The GEMM can write y itself (a float y: a bfloat16 one is rounded from the columns).
  const bool direct = cpu_group(g) == 1 && std::is_same_v<Y, T>;
  const bool bf16 = std::is_same_v<T, float> && products == Products::bfloat16;
  // With bfloat16 products, the filters' operand(s) after the chunks and Winograd's filters.
  T* const w_bf16 = scratch + chunks * per_chunk + conv2d_forward_filters(g);
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
  if constexpr (kOneChannelFloat<T> && std::is_same_v<X, T>) {
    if (uses_one_channel<T>(Level{}, g)) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512_BF16
      if (bf16) {
        const one_channel::Shape s = one_channel_view(g);
        ScratchFloats filters(g.out_c * g.kh * ((g.kw + 1) / 2));
        auto* wp = reinterpret_cast<std::uint32_t*>(filters.data());
        one_channel::detail::filter_pairs(s, w, wp);
        parallel_for(chunks, 1, [&](std::int64_t lo, std::int64_t hi) {
          ScratchFloats pairs(one_channel::input_pairs_words(s));
          for (std::int64_t n = lo * g.n / chunks; n < hi * g.n / chunks; ++n)
            one_channel::forward_bf16(s, x + n * g.h * g.w, wp, b, relu, y + n * g.out_c * out_hw,
                                      reinterpret_cast<std::uint32_t*>(pairs.data()));
        });
        return;
      }
#endif
      if (bf16) {  // elsewhere the float32 kernel on the operands rounded to bfloat16 values
        ScratchFloats filters(g.out_c * g.kh * g.kw);
        tinynet::detail::round_to_bf16(w, g.out_c * g.kh * g.kw, filters.data());
        parallel_for(chunks, 1, [&](std::int64_t lo, std::int64_t hi) {
          ScratchFloats image(g.h * g.w);
          for (std::int64_t n = lo * g.n / chunks; n < hi * g.n / chunks; ++n) {
            tinynet::detail::round_to_bf16(x + n * g.h * g.w, g.h * g.w, image.data());
            one_channel::forward(one_channel_view(g), image.data(), filters.data(), b, relu, y + n * g.out_c * out_hw);
          }
        });
        return;
      }
      parallel_for(chunks, 1, [&](std::int64_t lo, std::int64_t hi) {
        for (std::int64_t n = lo * g.n / chunks; n < hi * g.n / chunks; ++n)
          one_channel::forward(one_channel_view(g), x + n * g.h * g.w, w, b, relu, y + n * g.out_c * out_hw);
      });
      return;
    }
  }
#endif
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
  if constexpr (kWinogradFloat<T>) {
    if (uses_winograd<T>(Level{}, g)) {
      float* u = scratch + chunks * per_chunk;
      winograd::transform_weights<3>(w, g.out_c, g.c, false, u);
      bf16::Operand u16[16];
      if (bf16)
        for (int xi = 0; xi < 16; ++xi)
          u16[xi] =
              bf16::rows(g.out_c, g.c, u + xi * g.out_c * g.c, g.c, w_bf16 + xi * bf16_operand_floats(g.out_c, g.c));
      parallel_for(chunks, 1, [&](std::int64_t lo, std::int64_t hi) {
        for (std::int64_t ch = lo; ch < hi; ++ch)
          detail::for_each_group(g, cpu_group(g), ch, chunks, [&](std::int64_t first, std::int64_t count) {
            const winograd::Shape s = winograd_forward(g, count);
            float* v = scratch + ch * per_chunk;
            winograd::convolve<3>(s, u, bf16 ? u16 : nullptr, x + first * g.c * g.h * g.w, g.h * g.w, g.c * g.h * g.w,
                                  v, v + s.v_size(), b, relu, false, y + first * g.out_c * out_hw, out_hw,
                                  g.out_c * out_hw, chunks == 1);
          });
      });
      return;
    }
  }
#endif
  bf16::Operand w16;
  bool paired = false;
  if constexpr (std::is_same_v<T, float>) {
    paired = bf16 && detail::paired_columns(g);
    if (paired)  // the first chunk's scratch reorders them before the chunks start
      w16 = detail::paired_filters(g, w, scratch, w_bf16);
    else if (bf16)
      w16 = bf16::rows(g.out_c, kdim, w, kdim, w_bf16);
  }
  parallel_for(chunks, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t ch = lo; ch < hi; ++ch) {
      T* col = scratch + ch * per_chunk;
      T* y_cols = col + cpu_col_size(g);
      detail::for_each_group(g, cpu_group(g), ch, chunks, [&](std::int64_t first, std::int64_t count) {
        const std::int64_t ld = count * cols;
        const X* xs = x + first * g.c * g.h * g.w;
        Y* ys = y + first * g.out_c * out_hw;
        // Samples side by side: each one's columns out to y, adding the bias.
        const auto unpack = [&] {
          for (std::int64_t j = 0; j < count; ++j)
            for (std::int64_t o = 0; o < g.out_c; ++o)
              copy_plus_run(ys + (j * g.out_c + o) * out_hw, y_cols + o * ld + j * cols, b != nullptr ? b[o] : T(0),
                            out_hw, relu);
        };
        if constexpr (std::is_same_v<T, float> && bf16::kNative) {  // (paired needs vdpbf16ps)
          if (paired) {
            auto* xp = reinterpret_cast<std::uint32_t*>(col + kdim / 2 * ld);
            bf16::channel_pairs(count, g.c, g.h * g.w, xs, xp);
            Conv2dGeometry over_pairs = g;  // im2col over the pairs, one 32-bit element each
            over_pairs.c /= 2;
            detail::im2col_group(over_pairs, reinterpret_cast<const float*>(xp), count, col, ld);
          }
        }
        if constexpr (std::is_same_v<X, T>) {
          if (!paired) detail::im2col_group(g, xs, count, col, ld);
        }
        if constexpr (std::is_same_v<T, float>) {
          if (bf16) {  // the columns rounded in place, unless they are already pairs
            const bf16::Operand col16 = paired ? bf16::Operand{col, ld} : bf16::pairs(kdim, ld, col, ld, col);
            if constexpr (std::is_same_v<Y, T>) {
              if (direct) {
                bf16::gemm_rows(g.out_c, ld, kdim, w16, col16, ys, ld, b, relu, chunks == 1);
                return;
              }
            }
            bf16::gemm_rows(g.out_c, ld, kdim, w16, col16, y_cols, ld, nullptr, false, chunks == 1);
            unpack();
            return;
          }
        }
        if constexpr (std::is_same_v<X, T> && std::is_same_v<Y, T>) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
          if constexpr (std::is_same_v<T, float>) {
            if (direct) {  // bias and ReLU applied as the product is stored
              gemm_rows(g.out_c, cols, kdim, w, kdim, col, cols, ys, cols, b, relu, chunks == 1);
              return;
            }
            gemm_rows(g.out_c, ld, kdim, w, kdim, col, ld, y_cols, ld, nullptr, false, chunks == 1);
            unpack();
            return;
          }
#endif
          if (direct) {
            if (b != nullptr)
              for (std::int64_t o = 0; o < g.out_c; ++o) fill_run(ys + o * out_hw, b[o], out_hw);
            gemm<T>(false, false, g.out_c, cols, kdim, T(1), w, kdim, col, cols, b != nullptr ? T(1) : T(0), ys, cols,
                    chunks == 1);
            if (relu) relu_run(ys, g.out_c * out_hw);
            return;
          }
          gemm<T>(false, false, g.out_c, ld, kdim, T(1), w, kdim, col, ld, T(0), y_cols, ld, chunks == 1);
          unpack();
        }
      });
    }
  });
}

/// conv2d_backward at this level (backend/cpu/conv2d.hpp). X (x and dx), Y (gy and
/// y_relu): as conv2d_forward's.
template <typename T, typename X, typename Y>
void conv2d_backward(Level, const Conv2dGeometry& g, const X* x, const T* w, const Y* gy, X* dx, bool acc_dx, T* dw,
                     bool acc_dw, T* db, bool acc_db, T* scratch, const Y* y_relu, Products products) {
  const std::int64_t chunks = conv_chunks(g.n), out_hw = g.oh * g.ow, kdim = g.col_rows(), cols = g.col_cols();
  const std::int64_t wsize = g.out_c * kdim, per_chunk = conv2d_backward_scratch_per_chunk(g);
  const std::int64_t partials = per_chunk - wsize - g.out_c;  // offset of dw_part within a chunk
  // The input gradient through Winograd: its filters transformed once, after the chunks.
  const bool winograd_dx = uses_winograd<T>(Level{}, g) && dx != nullptr;
  const bool bf16 = std::is_same_v<T, float> && products == Products::bfloat16;
  // The weight gradient through Winograd too, but for float32 at the AVX2 level, where
  // im2col's is as fast (docs/performance.md).
  const bool winograd_dw =
      uses_winograd<T>(Level{}, g) && dw != nullptr && (bf16 || TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512);
  // im2col's weight gradient keeps cpu_group: the chunk's columns hold one such group.
  const std::int64_t group = winograd_dw ? backward_group(g) : cpu_group(g);
  const bool direct = group == 1 && y_relu == nullptr && std::is_same_v<Y, T>;  // gy is the column layout
  T* const u_dx = scratch + chunks * per_chunk;
  // With bfloat16 products: the filters' operand(s), then each chunk's output gradient's.
  T* const w_bf16 = u_dx + conv2d_backward_filters(g);
  T* const gy_bf16 = w_bf16 + conv2d_backward_bf16_weights(g);
  bf16::Operand w16[16];
  if constexpr (std::is_same_v<T, float>) {
    if (winograd_dx) {
      winograd::transform_weights<3>(w, g.out_c, g.c, true, u_dx);
      if (bf16)
        for (int xi = 0; xi < 16; ++xi)
          w16[xi] = bf16::rows(g.c, g.out_c, u_dx + xi * g.c * g.out_c, g.out_c,
                               w_bf16 + xi * bf16_operand_floats(g.c, g.out_c));
    }
  }
  // Otherwise, for gemm_rows, W^T: [kdim, out_c] in the same place.
  T* const w_t = u_dx;
  if constexpr (std::is_same_v<T, float>) {
    if (!winograd_dx && dx != nullptr && (bf16 || TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2)) {
      for (std::int64_t o = 0; o < g.out_c; ++o)
        for (std::int64_t r = 0; r < kdim; ++r) w_t[r * g.out_c + o] = w[o * kdim + r];
      if (bf16) w16[0] = bf16::rows(kdim, g.out_c, w_t, g.out_c, w_bf16);
    }
  }
  parallel_for(chunks, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t ch = lo; ch < hi; ++ch) {
      T* col = scratch + ch * per_chunk;
      T* dcol = col + conv2d_backward_dw_scratch(g);
      T* gy_cols = dcol + conv2d_backward_dx_scratch(g);
      T* dw_part = col + partials;
      T* db_part = dw_part + wsize;
      T* gy16 = bf16 ? gy_bf16 + ch * conv2d_backward_bf16_per_chunk(g) : nullptr;
      std::fill(dw_part, dw_part + wsize + g.out_c, T(0));
      // With winograd_dw the weight gradient's part holds the chunk's dU (the transformed
      // filters' gradient), then a group's tiles (conv2d_plan.hpp).
      T* const du = col;
      if (winograd_dw) std::fill(du, du + winograd_forward(g, 1).u_size(), T(0));
      detail::for_each_group(g, group, ch, chunks, [&](std::int64_t first, std::int64_t count) {
        const std::int64_t ld = count * cols;
        const Y* gys = gy + first * g.out_c * out_hw;
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
        if constexpr (std::is_same_v<Y, bfloat16> && std::is_same_v<T, float>) {
          // The output gradient masked straight into bfloat16 where every pass after it reads
          // bfloat16 (the bias's sums from the same values): a first layer's weight gradient
          // through bfloat16 columns (gemm_nt's rows, padded to pairs), or Winograd's
          // transforms (the columns' layout). No float32 columns to write and read back.
          const bool rows16 =
              bf16 && dx == nullptr && dw != nullptr && !winograd_dw && detail::bf16_columns(g, count, ld);
          const bool winograd16 = bf16 && uses_winograd<T>(Level{}, g) && (dw != nullptr || dx != nullptr);
          if (rows16 || winograd16) {
            const std::int64_t ld16 = rows16 ? (ld + 1) / 2 * 2 : ld;
            auto* gy_masked = reinterpret_cast<bfloat16*>(rows16 ? gy16 : gy_cols);
            for (std::int64_t o = 0; o < g.out_c; ++o) {
              Vec sums = Vec::zero();
              for (std::int64_t j = 0; j < count; ++j) {
                const std::int64_t at = (j * g.out_c + o) * out_hw;
                sums = sums + relu_grad_run_sums(gy_masked + o * ld16 + j * cols, gys + at,
                                                 y_relu != nullptr ? y_relu + first * g.out_c * out_hw + at : nullptr,
                                                 out_hw);
              }
              if (ld16 != ld) gy_masked[o * ld16 + ld] = bfloat16(0.0f);  // gemm_nt reads rows in pairs
              if (db != nullptr) db_part[o] += sum(sums);
            }
            if (rows16) {
              bf16::gemm_nt(g.out_c, kdim, ld, bf16::Operand{gy16, ld16},
                            detail::im2col_bf16(g, x + first * g.c * g.h * g.w, count, col, ld), dw_part, kdim);
              return;
            }
            if (winograd_dw) {
              const winograd::Shape s = winograd_forward(g, count);
              T* v = du + s.u_size();
              winograd::weight_grad<3>(s, x + first * g.c * g.h * g.w, g.h * g.w, g.c * g.h * g.w, gy_masked, ld, cols,
                                       v, v + s.v_size(), true, du);
            }
            if (winograd_dx) {
              const winograd::Shape s = winograd_input_grad(g, count);
              winograd::convolve<3>(s, u_dx, w16, gy_masked, ld, cols, dcol, dcol + s.v_size(), nullptr, false, acc_dx,
                                    dx + first * g.c * g.h * g.w, g.h * g.w, g.c * g.h * g.w, chunks == 1);
            }
            return;
          }
        }
#endif
        // The output gradient in the column layout: samples side by side and/or masked by
        // the fused ReLU, and float; gy itself when it already is.
        const T* gyc = nullptr;
        if constexpr (std::is_same_v<Y, T>) gyc = gys;
        if (!direct) {
          for (std::int64_t j = 0; j < count; ++j)
            for (std::int64_t o = 0; o < g.out_c; ++o) {
              T* dst = gy_cols + o * ld + j * cols;
              const std::int64_t at = (j * g.out_c + o) * out_hw;
              if (y_relu != nullptr)
                relu_grad_run(dst, gys + at, y_relu + first * g.out_c * out_hw + at, out_hw);
              else
                copy_run(dst, gys + at, out_hw);
            }
          gyc = gy_cols;
        }
        if (winograd_dw) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
          if constexpr (kWinogradFloat<T>) {  // from gyc, masked and in cache
            const winograd::Shape s = winograd_forward(g, count);
            T* v = du + s.u_size();
            winograd::weight_grad<3>(s, x + first * g.c * g.h * g.w, g.h * g.w, g.c * g.h * g.w, gyc, ld, cols, v,
                                     v + s.v_size(), bf16, du);
          }
#endif
        } else if (dw != nullptr) {
          detail::add_weight_grad(g, gyc, x + first * g.c * g.h * g.w, count, col, ld, dw_part, gy16);
        }
        if (db != nullptr)
          for (std::int64_t o = 0; o < g.out_c; ++o) db_part[o] += sum_run(gyc + o * ld, ld);
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
        if constexpr (kWinogradFloat<T>) {
          if (winograd_dx) {
            // gyc holds sample j's channel o at gyc + o * ld + j * cols.
            const winograd::Shape s = winograd_input_grad(g, count);
            winograd::convolve<3>(s, u_dx, bf16 ? w16 : nullptr, gyc, ld, cols, dcol, dcol + s.v_size(), nullptr, false,
                                  acc_dx, dx + first * g.c * g.h * g.w, g.h * g.w, g.c * g.h * g.w, chunks == 1);
            return;
          }
        }
#endif
        if (dx != nullptr) {
          detail::input_grad_columns(g, w, w_t, w16[0], gyc, ld, bf16, dcol, chunks == 1);
          for (std::int64_t j = 0; j < count; ++j) {
            X* dxs = dx + (first + j) * g.c * g.h * g.w;
            if (g.stride1_unpadded()) {
              col2im_gather(g, dcol + j * cols, ld, dxs, acc_dx);
              continue;
            }
            if constexpr (std::is_same_v<X, T>) {  // (a bfloat16 dx: only gathered)
              if (!acc_dx) std::fill(dxs, dxs + g.c * g.h * g.w, T(0));
              col2im_add(g, dcol + j * cols, ld, dxs);
            }
          }
        }
      });
    }
  });
  // Fixed-order sums of the chunks' partials (at src + ch * stride): deterministic for a
  // given thread count.
  const auto sum_chunks = [&](T* dst, bool acc, const T* src, std::int64_t stride, std::int64_t len) {
    for (std::int64_t i = 0; i < len; ++i) {
      T total = acc ? dst[i] : T(0);
      for (std::int64_t ch = 0; ch < chunks; ++ch) total += src[ch * stride + i];
      dst[i] = total;
    }
  };
  if (dw != nullptr && !winograd_dw) sum_chunks(dw, acc_dw, scratch + partials, per_chunk, wsize);
  if (db != nullptr) sum_chunks(db, acc_db, scratch + partials + wsize, per_chunk, g.out_c);
  if constexpr (std::is_same_v<T, float>) {
    if (winograd_dw) {  // the chunks' dU summed into the first's, then transformed into dw
      sum_chunks(scratch, false, scratch, per_chunk, winograd_forward(g, 1).u_size());
      winograd::transform_weight_grad<3>(scratch, g.out_c, g.c, acc_dw, dw);
    }
  }
}
