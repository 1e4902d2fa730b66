/// \file
/// linear's and matmul's products at one vector level. float32 at the AVX2 and AVX-512 levels reads
/// both operands in place (gemm_nt for the forward, whose inner dimension is the long one;
/// gemm_rows for the two gradients); everything else goes through Eigen (detail/gemm.hpp),
/// whose vector width is fixed by the program's compiler flags.

/// y[n,o] = sum_i x[n,i] w[o,i] + b[o]   (b may be null)
template <typename T>
void linear_forward(Level, const T* x, const T* w, const T* b, T* y, std::int64_t batch, std::int64_t in,
                    std::int64_t out) {
  for (std::int64_t n = 0; n < batch; ++n)
    for (std::int64_t o = 0; o < out; ++o) y[n * out + o] = b != nullptr ? b[o] : T(0);
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
  if constexpr (std::is_same_v<T, float>) {
    // Rows of the batch split over the threads in blocks of gemm_nt's 4 rows, when the
    // product is big enough to pay for a second thread (as in detail/gemm.hpp).
    const std::int64_t blocks = (batch + 3) / 4;
    const std::int64_t parts =
        batch * out * in > (std::int64_t{1} << 21) ? std::min<std::int64_t>(blocks, get_num_threads()) : 1;
    if (parts == 1) {
      gemm_nt(batch, out, in, x, in, w, in, y, out);
      return;
    }
    parallel_for(parts, 1, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t p = lo; p < hi; ++p) {
        const std::int64_t r0 = std::min(batch, p * blocks / parts * 4),
                           r1 = std::min(batch, (p + 1) * blocks / parts * 4);
        gemm_nt(r1 - r0, out, in, x + r0 * in, in, w, in, y + r0 * out, out);
      }
    });
    return;
  }
#endif
  gemm<T>(false, true, batch, out, in, T(1), x, in, w, in, T(1), y, out);
}

/// dx (+)= gy W
template <typename T>
void linear_backward_input(Level, const T* gy, const T* w, T* dx, std::int64_t batch, std::int64_t in, std::int64_t out,
                           bool accumulate) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
  if constexpr (std::is_same_v<T, float>) {
    if (!accumulate)
      return gemm_rows(batch, in, out, gy, out, w, in, dx, in, nullptr, false,
                       batch * in * out > (std::int64_t{1} << 21));
  }
#endif
  gemm<T>(false, false, batch, in, out, T(1), gy, out, w, in, accumulate ? T(1) : T(0), dx, in);
}

/// dW (+)= gy^T x
template <typename T>
void linear_backward_weight(Level, const T* gy, const T* x, T* dw, std::int64_t batch, std::int64_t in,
                            std::int64_t out, bool accumulate) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
  if constexpr (std::is_same_v<T, float>) {
    if (!accumulate) {
      // gemm_rows wants gy^T's rows: [out, batch], small next to x.
      std::vector<float> gy_t(static_cast<std::size_t>(out * batch));
      for (std::int64_t n = 0; n < batch; ++n)
        for (std::int64_t o = 0; o < out; ++o) gy_t[static_cast<std::size_t>(o * batch + n)] = gy[n * out + o];
      return gemm_rows(out, in, batch, gy_t.data(), batch, x, in, dw, in, nullptr, false,
                       batch * in * out > (std::int64_t{1} << 21));
    }
  }
#endif
  gemm<T>(true, false, out, in, batch, T(1), gy, out, x, in, accumulate ? T(1) : T(0), dw, in);
}
