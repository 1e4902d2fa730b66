/// \file
/// linear's products at one vector level. float32 at the AVX2 and AVX-512 levels reads
/// both operands in place (gemm_nt for the forward, whose inner dimension is the long one;
/// gemm_rows for the two gradients); everything else goes through Eigen (detail/gemm.hpp),
/// whose vector width is fixed by the program's compiler flags. With bfloat16 products
/// (autocast) the same three products take bfloat16 operands (simd/bf16_operands.inl): the weights
/// and the input rounded inside the products, a block at a time, the small output
/// gradient prepared in scratch from the CPU caching allocator. Under autocast with
/// bfloat16 activations (x, y and their gradients; from the AVX2 level up, with
/// AVX512-BF16 for an even number of input features: backend/cpu/linear.hpp's
/// supports_bf16) the products read x as it is (paired, or widened a block at a time for
/// the float32 kernels) and the outputs are rounded once as they are stored.

namespace detail {

/// Products big enough to pay for a second thread (as in detail/gemm.hpp).
inline bool linear_parallel(std::int64_t batch, std::int64_t in, std::int64_t out) {
  return batch * out * in > (std::int64_t{1} << 21);
}

/// Calls f(r0, r1) for the rows of the batch, split over the threads in blocks of 4 rows
/// when the product pays for it.
template <typename F>
void for_row_blocks(std::int64_t batch, std::int64_t in, std::int64_t out, F&& f) {
  const std::int64_t blocks = (batch + 3) / 4;
  const std::int64_t parts = linear_parallel(batch, in, out) ? std::min<std::int64_t>(blocks, get_num_threads()) : 1;
  if (parts == 1) return f(std::int64_t{0}, batch);
  parallel_for(parts, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t p = lo; p < hi; ++p)
      f(std::min(batch, p * blocks / parts * 4), std::min(batch, (p + 1) * blocks / parts * 4));
  });
}

/// dst (+)= src over n floats.
inline void store_or_add(float* dst, const float* src, std::int64_t n, bool accumulate) {
  for (std::int64_t i = 0; i < n; ++i) dst[i] = accumulate ? dst[i] + src[i] : src[i];
}

}  // namespace detail

/// y[n,o] = sum_i x[n,i] w[o,i] + b[o]   (b may be null)
template <typename T>
void linear_forward(Level, const T* x, const T* w, const T* b, T* y, std::int64_t batch, std::int64_t in,
                    std::int64_t out, Products products) {
  for (std::int64_t n = 0; n < batch; ++n)
    for (std::int64_t o = 0; o < out; ++o) y[n * out + o] = b != nullptr ? b[o] : T(0);
  if constexpr (std::is_same_v<T, float>) {
    if (products == Products::bfloat16)
      return bf16::gemm_nt_rounding(batch, out, in, x, in, w, in, y, out, detail::linear_parallel(batch, in, out));
  }
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
  if constexpr (std::is_same_v<T, float>) {
    // Rows of the batch split over the threads in blocks of gemm_nt's 4 rows.
    detail::for_row_blocks(batch, in, out, [&](std::int64_t r0, std::int64_t r1) {
      gemm_nt(r1 - r0, out, in, x + r0 * in, in, w, in, y + r0 * out, out);
    });
    return;
  }
#endif
  gemm<T>(false, true, batch, out, in, T(1), x, in, w, in, T(1), y, out);
}

/// dx (+)= gy W
template <typename T>
void linear_backward_input(Level, const T* gy, const T* w, T* dx, std::int64_t batch, std::int64_t in, std::int64_t out,
                           bool accumulate, Products products) {
  if constexpr (std::is_same_v<T, float>) {
    if (products == Products::bfloat16) {
      ScratchFloats gs(bf16_operand_floats(batch, out)), sum(accumulate ? batch * in : 0);
      float* to = accumulate ? sum.data() : dx;
      bf16::gemm_rows_rounding_b(batch, in, out, bf16::rows(batch, out, gy, out, gs.data()), w, in, to, in,
                                 detail::linear_parallel(batch, in, out));
      if (accumulate) detail::store_or_add(dx, to, batch * in, true);
      return;
    }
  }
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
  if constexpr (std::is_same_v<T, float>) {
    if (!accumulate)
      return gemm_rows(batch, in, out, gy, out, w, in, dx, in, nullptr, false, detail::linear_parallel(batch, in, out));
  }
#endif
  gemm<T>(false, false, batch, in, out, T(1), gy, out, w, in, accumulate ? T(1) : T(0), dx, in);
}

/// dW (+)= gy^T x
template <typename T>
void linear_backward_weight(Level, const T* gy, const T* x, T* dw, std::int64_t batch, std::int64_t in,
                            std::int64_t out, bool accumulate, Products products) {
  if constexpr (std::is_same_v<T, float>) {
    const bool bf16 = products == Products::bfloat16;
    if (bf16 || (TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2 && !accumulate)) {
      // gemm_rows wants gy^T's rows: [out, batch], small next to x.
      ScratchFloats gy_t(out * batch);
      for (std::int64_t n = 0; n < batch; ++n)
        for (std::int64_t o = 0; o < out; ++o) gy_t.data()[o * batch + n] = gy[n * out + o];
      const bool parallel = detail::linear_parallel(batch, in, out);
      if (bf16) {
        ScratchFloats gs(bf16_operand_floats(out, batch)), sum(accumulate ? out * in : 0);
        float* to = accumulate ? sum.data() : dw;
        bf16::gemm_rows_rounding_b(out, in, batch, bf16::rows(out, batch, gy_t.data(), batch, gs.data()), x, in, to, in,
                                   parallel);
        if (accumulate) detail::store_or_add(dw, to, out * in, true);
        return;
      }
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
      return gemm_rows(out, in, batch, gy_t.data(), batch, x, in, dw, in, nullptr, false, parallel);
#endif
    }
  }
  gemm<T>(true, false, out, in, batch, T(1), gy, out, x, in, accumulate ? T(1) : T(0), dw, in);
}

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2

namespace detail {

/// gy's rows as float32 rows (transposed: [out, batch], with `transpose`), for the small
/// left operand of linear's gradient products.
inline void widen(const bfloat16* gy, std::int64_t batch, std::int64_t out, bool transpose, float* dst) {
  for (std::int64_t n = 0; n < batch; ++n)
    for (std::int64_t o = 0; o < out; ++o)
      dst[transpose ? o * batch + n : n * out + o] = static_cast<float>(gy[n * out + o]);
}

}  // namespace detail

/// y[n,o] = sum_i x[n,i] w[o,i] + b[o] with bfloat16 activations (b may be null): the sums
/// in float32, y rounded once.
template <typename T>
void linear_forward(Level, const bfloat16* x, const T* w, const T* b, bfloat16* y, std::int64_t batch, std::int64_t in,
                    std::int64_t out) {
  ScratchFloats sums(batch * out);
  for (std::int64_t n = 0; n < batch; ++n)
    for (std::int64_t o = 0; o < out; ++o) sums.data()[n * out + o] = b != nullptr ? b[o] : 0.0f;
  bf16::gemm_nt_rounding(batch, out, in, x, in, w, in, sums.data(), out, detail::linear_parallel(batch, in, out));
  copy_run(y, sums.data(), batch * out);
}

/// dx (+)= gy W with bfloat16 activations: the sums in float32, dx rounded once (added to
/// dx in float with `accumulate`).
template <typename T>
void linear_backward_input(Level, const bfloat16* gy, const T* w, bfloat16* dx, std::int64_t batch, std::int64_t in,
                           std::int64_t out, bool accumulate) {
  ScratchFloats g32(batch * out), gs(bf16::exact_rows_floats(batch, out)), sums(batch * in);
  detail::widen(gy, batch, out, false, g32.data());
  bf16::gemm_rows_rounding_b(batch, in, out, bf16::exact_rows(batch, out, g32.data(), out, gs.data()), w, in,
                             sums.data(), in, detail::linear_parallel(batch, in, out));
  copy_run(dx, sums.data(), batch * in, accumulate);
}

/// dW (+)= gy^T x with bfloat16 activations: x paired as it is.
template <typename T>
void linear_backward_weight(Level, const bfloat16* gy, const bfloat16* x, T* dw, std::int64_t batch, std::int64_t in,
                            std::int64_t out, bool accumulate) {
  ScratchFloats gy_t(out * batch), gs(bf16::exact_rows_floats(out, batch)), sum(accumulate ? out * in : 0);
  detail::widen(gy, batch, out, true, gy_t.data());
  float* to = accumulate ? sum.data() : dw;
  bf16::gemm_rows_rounding_b(out, in, batch, bf16::exact_rows(out, batch, gy_t.data(), batch, gs.data()), x, in, to, in,
                             detail::linear_parallel(batch, in, out));
  if (accumulate) detail::store_or_add(dw, to, out * in, true);
}

#endif  // TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
