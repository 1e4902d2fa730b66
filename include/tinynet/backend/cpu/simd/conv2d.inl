/// \file
/// conv2d's forward kernels at one vector level (NCHW), and the columns and groups the
/// backward (simd/conv2d_backward.inl) shares: a plan, then one strategy. im2col + GEMM per
/// sample (or per group of samples side by side when outputs are small), samples split into
/// a fixed number of chunks run in parallel; stride-1 3x3 convolutions with enough channels
/// take Winograd F(2x2, 3x3) instead, and one-channel layers a direct kernel (float32 at the
/// AVX2 level and up; simd/winograd.inl, simd/conv2d_one_channel.inl).
///
/// With bfloat16 products (autocast, float32 only) every GEMM, Winograd's included, takes
/// bfloat16 operands (simd/bf16_operands.inl): the filters are prepared once per call, the columns,
/// Winograd's tiles and the output gradient in each chunk. With AVX512-BF16 the forward's
/// columns are copied from the input rounded once into pairs of channels
/// (paired_columns), and the direct one-channel kernel multiplies pairs of taps
/// (one_channel::forward_bf16); elsewhere it runs on rounded copies of the image and filters.
///
/// Under autocast the output is bfloat16 at every level (conv2d_takes_bf16): every
/// path rounds it as it stores it, and the backward reads the output gradient (and a fused
/// ReLU's output) in the masked copy that makes its float32 columns, whose values are then
/// the products' operand as they are; from the AVX-512 level up a bfloat16 input is read
/// as it is where the path allows.

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
/// backend/cpu/conv2d.hpp entry of the same name): outputs at every level; inputs
/// from the AVX-512 level up, where each pass reads and writes them as they are: Winograd's
/// transforms, or im2col's stride-1 unpadded columns with a gathered input gradient (with
/// vdpbf16ps columns of channel pairs forward and bfloat16 columns for the weight gradient;
/// below it float columns from the input widened). T: the parameters' type (float32 only).
template <typename T>
bool conv2d_takes_bf16(Level, const Conv2dGeometry& g, bool input);

/// col[(ci*kh + i)*kw + j, y*ow + x] = input[ci, y*sh - ph + i, x*sw - pw + j] (0 outside).
/// `ld`: the distance between rows of col (col_cols() for one sample; more when samples
/// sit side by side).
template <typename T>
void im2col(const Conv2dGeometry& g, const T* in, T* col, std::int64_t ld) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
  if constexpr (kVectorRuns<T>) {
    if (detail::stride2_rows(g)) return detail::im2col_stride2(g, in, col, ld);
  }
#endif
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
          if (g.sw == 1)
            copy_run(out + x0, src, x1 - x0);
          else
            copy_strided_run(out + x0, src, g.sw, x1 - x0);
          fill_run(out + x1, T(0), g.ow - x1);
        }
      }
}

namespace detail {

/// im2col for `count` samples from xs side by side: sample j's columns start at col + j * cols.
template <typename T>
void im2col_group(const Conv2dGeometry& g, const T* xs, std::int64_t count, T* col, std::int64_t ld) {
  for (std::int64_t j = 0; j < count; ++j) im2col(g, xs + j * g.c * g.h * g.w, col + j * g.col_cols(), ld);
}

#if TINYNET_ISA_LEVEL < TINYNET_ISA_AVX512_BF16
/// Where bfloat16 products run in the float32 kernels (no vdpbf16ps), the columns of
/// `count` samples as a product's operand: bfloat16 values held in float. im2col only
/// copies and pads with zeros, so rounding the input first (into scratch) gives the same
/// columns in a pass over fewer values wherever the columns outnumber the input (kh kw oh
/// ow > h w: a stride-1 layer with a kernel bigger than 1x1); otherwise the columns are
/// rounded in place. A bfloat16 input (X) is widened instead: its values are the operand's.
/// (With vdpbf16ps the operands are pairs: im2col_bf16, paired columns.)
template <typename X>
bf16::Operand rounded_columns(const Conv2dGeometry& g, const X* xs, std::int64_t count, float* col, std::int64_t ld) {
  const std::int64_t n = count * g.c * g.h * g.w;
  if constexpr (std::is_same_v<X, bfloat16>) {
    ScratchFloats widened(n);
    copy_run(widened.data(), xs, n);
    im2col_group(g, static_cast<const float*>(widened.data()), count, col, ld);
    return {col, ld};
  } else {
    if (g.h * g.w < g.kh * g.kw * g.oh * g.ow) {
      ScratchFloats rounded(n);
      bf16::rows(1, n, xs, n, rounded.data());
      im2col_group(g, static_cast<const float*>(rounded.data()), count, col, ld);
      return {col, ld};
    }
    im2col_group(g, xs, count, col, ld);
    return bf16::rows(g.col_rows(), ld, col, ld, col);
  }
}
#endif

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
bool conv2d_takes_bf16(Level, [[maybe_unused]] const Conv2dGeometry& g, bool input) {
  if (!std::is_same_v<T, float>) return false;
  if (!input) return true;
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
  if (uses_winograd<float>(Level{}, g)) return true;
  if (uses_one_channel<float>(Level{}, g) || !g.stride1_unpadded()) return false;
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512_BF16
  if (!detail::paired_columns(g)) return false;
  for (std::int64_t count = 1; count <= cpu_group(g); ++count)
    if (!detail::bf16_columns(g, count, count * g.col_cols())) return false;
#endif
  return true;
#else
  return false;
#endif
}

namespace detail {

/// What conv2d_forward's strategies share: how the samples split into chunks run in
/// parallel, the scratch each chunk has, and how the products run.
struct ForwardPlan {
  std::int64_t chunks, per_chunk, out_hw, cols, kdim;
  bool bf16;    // bfloat16 products (float32 parameters under autocast)
  bool direct;  // one sample per GEMM, which writes a float y itself (a bfloat16 one is rounded from the columns)
};

template <typename T, typename Y>
ForwardPlan forward_plan(const Conv2dGeometry& g, Products products) {
  return {conv_chunks(g.n),
          conv2d_forward_scratch_per_chunk(g),
          g.oh * g.ow,
          g.col_cols(),
          g.col_rows(),
          std::is_same_v<T, float> && products == Products::bfloat16,
          cpu_group(g) == 1 && std::is_same_v<Y, T>};
}

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
/// The direct one-channel kernel, sample by sample: with bfloat16 products on pairs of taps
/// (vdpbf16ps), or elsewhere on copies of the image and filters rounded to bfloat16 values.
template <typename Y>
void forward_one_channel(const Conv2dGeometry& g, const ForwardPlan& p, const float* x, const float* w, const float* b,
                         Y* y, bool relu) {
  const one_channel::Shape s = one_channel_view(g);
  const auto samples = [&](auto&& run) {  // run(first, end) for each chunk's samples, in parallel
    parallel_for(p.chunks, 1, [&](std::int64_t lo, std::int64_t hi) { run(lo * g.n / p.chunks, hi * g.n / p.chunks); });
  };
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512_BF16
  if (p.bf16) {
    ScratchFloats filters(g.out_c * g.kh * ((g.kw + 1) / 2));
    auto* wp = reinterpret_cast<std::uint32_t*>(filters.data());
    one_channel::detail::filter_pairs(s, w, wp);
    return samples([&](std::int64_t first, std::int64_t end) {
      ScratchFloats pairs(one_channel::input_pairs_words(s));
      for (std::int64_t n = first; n < end; ++n)
        one_channel::forward_bf16(s, x + n * g.h * g.w, wp, b, relu, y + n * g.out_c * p.out_hw,
                                  reinterpret_cast<std::uint32_t*>(pairs.data()));
    });
  }
#endif
  if (p.bf16) {
    ScratchFloats filters(g.out_c * g.kh * g.kw);
    tinynet::detail::round_to_bf16(w, g.out_c * g.kh * g.kw, filters.data());
    return samples([&](std::int64_t first, std::int64_t end) {
      ScratchFloats image(g.h * g.w);
      for (std::int64_t n = first; n < end; ++n) {
        tinynet::detail::round_to_bf16(x + n * g.h * g.w, g.h * g.w, image.data());
        one_channel::forward(s, image.data(), filters.data(), b, relu, y + n * g.out_c * p.out_hw);
      }
    });
  }
  samples([&](std::int64_t first, std::int64_t end) {
    for (std::int64_t n = first; n < end; ++n)
      one_channel::forward(s, x + n * g.h * g.w, w, b, relu, y + n * g.out_c * p.out_hw);
  });
}

/// Winograd F(2x2, 3x3): the filters transformed once (and prepared as bfloat16 operands),
/// then each group of samples convolved in its chunk's scratch.
template <typename X, typename Y>
void forward_winograd(const Conv2dGeometry& g, const ForwardPlan& p, const X* x, const float* w, const float* b, Y* y,
                      float* scratch, float* w_bf16, bool relu) {
  float* u = scratch + p.chunks * p.per_chunk;
  winograd::transform_weights<3>(w, g.out_c, g.c, false, u);
  bf16::Operand u16[16];
  if (p.bf16)
    for (int xi = 0; xi < 16; ++xi)
      u16[xi] = bf16::rows(g.out_c, g.c, u + xi * g.out_c * g.c, g.c, w_bf16 + xi * bf16_operand_floats(g.out_c, g.c));
  parallel_for(p.chunks, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t ch = lo; ch < hi; ++ch)
      for_each_group(g, cpu_group(g), ch, p.chunks, [&](std::int64_t first, std::int64_t count) {
        const winograd::Shape s = winograd_forward(g, count);
        float* v = scratch + ch * p.per_chunk;
        winograd::convolve<3>(s, u, p.bf16 ? u16 : nullptr, x + first * g.c * g.h * g.w, g.h * g.w, g.c * g.h * g.w, v,
                              v + s.v_size(), b, relu, false, y + first * g.out_c * p.out_hw, p.out_hw,
                              g.out_c * p.out_hw, p.chunks == 1);
      });
  });
}
#endif

/// The im2col strategy's filters: with bfloat16 products the left operand, reordered for
/// columns of channel pairs where those are made (`paired`, set here; scratch's first
/// chunk reorders them before the chunks start).
template <typename T>
bf16::Operand im2col_filters(const Conv2dGeometry& g, const ForwardPlan& p, const T* w, T* scratch, T* w_bf16,
                             bool& paired) {
  paired = false;
  if constexpr (std::is_same_v<T, float>) {
    paired = p.bf16 && paired_columns(g);
    if (paired) return paired_filters(g, w, scratch, w_bf16);
    if (p.bf16) return bf16::rows(g.out_c, p.kdim, w, p.kdim, w_bf16);
  }
  return {};
}

/// The columns of `count` samples at xs, side by side in col (ld apart), made from the
/// samples' channel pairs (`paired`) or by im2col; with bfloat16 products returned as the
/// GEMM's right operand (pairs already; else, where the products take floats, from the
/// input rounded once: rounded_columns; else rounded in place).
template <typename T, typename X>
bf16::Operand im2col_columns(const Conv2dGeometry& g, const ForwardPlan& p, const X* xs, std::int64_t count, T* col,
                             std::int64_t ld, bool paired) {
  if constexpr (std::is_same_v<T, float> && bf16::kNative) {  // (paired needs vdpbf16ps)
    if (paired) {
      auto* xp = reinterpret_cast<std::uint32_t*>(col + p.kdim / 2 * ld);
      bf16::channel_pairs(count, g.c, g.h * g.w, xs, xp);
      Conv2dGeometry over_pairs = g;  // im2col over the pairs, one 32-bit element each
      over_pairs.c /= 2;
      im2col_group(over_pairs, reinterpret_cast<const float*>(xp), count, col, ld);
      return {col, ld};
    }
  }
#if TINYNET_ISA_LEVEL < TINYNET_ISA_AVX512_BF16
  if constexpr (std::is_same_v<T, float>) {
    if (p.bf16) return rounded_columns(g, xs, count, col, ld);
  }
#endif
  if constexpr (std::is_same_v<X, T>) im2col_group(g, xs, count, col, ld);
  if constexpr (std::is_same_v<T, float>) {
    if (p.bf16) return bf16::pairs(p.kdim, ld, col, ld, col);
  }
  return {};
}

/// One group's output from its columns: W col into y itself (`direct`: bias and ReLU applied
/// as the product is stored) or into y_cols, then unpacked sample by sample with the bias.
template <typename T, typename Y>
void im2col_product(const Conv2dGeometry& g, const ForwardPlan& p, std::int64_t count, const T* w,
                    const bf16::Operand& w16, const T* col, const bf16::Operand& col16, const T* b, Y* ys, T* y_cols,
                    bool relu) {
  const std::int64_t ld = count * p.cols, hw = p.out_hw;
  const auto unpack = [&] {  // samples side by side: each one's columns out to y, adding the bias
    for (std::int64_t j = 0; j < count; ++j)
      for (std::int64_t o = 0; o < g.out_c; ++o)
        copy_plus_run(ys + (j * g.out_c + o) * hw, y_cols + o * ld + j * p.cols, b != nullptr ? b[o] : T(0), hw, relu);
  };
  if constexpr (std::is_same_v<T, float>) {
    if (p.bf16) {
      if constexpr (std::is_same_v<Y, T>) {
        if (p.direct) return bf16::gemm_rows(g.out_c, ld, p.kdim, w16, col16, ys, ld, b, relu, p.chunks == 1);
      }
      bf16::gemm_rows(g.out_c, ld, p.kdim, w16, col16, y_cols, ld, nullptr, false, p.chunks == 1);
      return unpack();
    }
  }
  if constexpr (std::is_same_v<Y, T>) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
    if constexpr (std::is_same_v<T, float>) {
      if (p.direct)
        return gemm_rows(g.out_c, p.cols, p.kdim, w, p.kdim, col, p.cols, ys, p.cols, b, relu, p.chunks == 1);
      gemm_rows(g.out_c, ld, p.kdim, w, p.kdim, col, ld, y_cols, ld, nullptr, false, p.chunks == 1);
      return unpack();
    }
#endif
    if (p.direct) {
      if (b != nullptr)
        for (std::int64_t o = 0; o < g.out_c; ++o) fill_run(ys + o * hw, b[o], hw);
      gemm<T>(false, false, g.out_c, p.cols, p.kdim, T(1), w, p.kdim, col, p.cols, b != nullptr ? T(1) : T(0), ys,
              p.cols, p.chunks == 1);
      if (relu) relu_run(ys, g.out_c * hw);
      return;
    }
    gemm<T>(false, false, g.out_c, ld, p.kdim, T(1), w, p.kdim, col, ld, T(0), y_cols, ld, p.chunks == 1);
    unpack();
  }
}

/// im2col + GEMM, group by group of samples in each chunk's scratch.
template <typename T, typename X, typename Y>
void forward_im2col(const Conv2dGeometry& g, const ForwardPlan& p, const X* x, const T* w, const T* b, Y* y, T* scratch,
                    T* w_bf16, bool relu) {
  bool paired = false;
  const bf16::Operand w16 = im2col_filters(g, p, w, scratch, w_bf16, paired);
  parallel_for(p.chunks, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t ch = lo; ch < hi; ++ch) {
      T* col = scratch + ch * p.per_chunk;
      for_each_group(g, cpu_group(g), ch, p.chunks, [&](std::int64_t first, std::int64_t count) {
        const X* xs = x + first * g.c * g.h * g.w;
        const bf16::Operand col16 = im2col_columns(g, p, xs, count, col, count * p.cols, paired);
        im2col_product(g, p, count, w, w16, col, col16, b, y + first * g.out_c * p.out_hw, col + cpu_col_size(g), relu);
      });
    }
  });
}

}  // namespace detail

/// conv2d_forward at this level (backend/cpu/conv2d.hpp): the plan, then one strategy (the
/// direct one-channel kernel, Winograd, or im2col + GEMM). X, Y: T, or for float32 under
/// autocast bfloat16 (activations; where conv2d_takes_bf16 says so).
template <typename T, typename X, typename Y>
void conv2d_forward(Level, const Conv2dGeometry& g, const X* x, const T* w, const T* b, Y* y, T* scratch, bool relu,
                    Products products) {
  const detail::ForwardPlan p = detail::forward_plan<T, Y>(g, products);
  // With bfloat16 products, the filters' operand(s) after the chunks and Winograd's filters.
  T* const w_bf16 = scratch + p.chunks * p.per_chunk + conv2d_forward_filters(g);
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
  if constexpr (kOneChannelFloat<T> && std::is_same_v<X, T>) {
    if (uses_one_channel<T>(Level{}, g)) return detail::forward_one_channel(g, p, x, w, b, y, relu);
  }
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AMX
  if constexpr (std::is_same_v<T, float>) {
    if (p.bf16 && conv3x3::fits(g)) return conv3x3::forward<tile::Hardware>(g, x, w, b, y, relu);
  }
#endif
  if constexpr (kWinogradFloat<T>) {
    if (uses_winograd<T>(Level{}, g)) return detail::forward_winograd(g, p, x, w, b, y, scratch, w_bf16, relu);
  }
#endif
  detail::forward_im2col(g, p, x, w, b, y, scratch, w_bf16, relu);
}
