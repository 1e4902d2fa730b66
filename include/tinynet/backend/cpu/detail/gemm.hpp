#pragma once
/// \file
/// C = alpha * op(A) * op(B) + beta * C on row-major matrices, through Eigen.
/// The one GEMM every CPU op uses (linear, matmul, conv2d); large products are split
/// over output rows or columns with oneTBB, each block a single-threaded Eigen product.

#include "tinynet/core/config.hpp"

// An nvcc unit calling tinynet::cpu_kernels' levels (core/config.hpp) shares Eigen's GEMM
// templates with the library's objects, one copy of each kept at link time: Eigen must be
// configured as there. For CUDA sources Eigen would otherwise drop vectorization, giving
// the same templates other bodies; tinynet's CUDA backend runs no Eigen on the device.
#if defined(TINYNET_CPU_LEVELS_DECLARED_ONLY) && !defined(EIGEN_NO_CUDA)
#define EIGEN_NO_CUDA
#endif
#include <Eigen/Core>
#if defined(TINYNET_CPU_LEVELS_DECLARED_ONLY) && defined(EIGEN_GPUCC)
#error "Eigen was included for CUDA before tinynet: define EIGEN_NO_CUDA (tinynet::cpu_kernels' CMake target does)"
#endif
#include <cstdint>

#include "tinynet/core/parallel.hpp"

namespace tinynet::backend::cpu {

template <typename T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using MatMap = Eigen::Map<RowMatrix<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <typename T>
using ConstMatMap = Eigen::Map<const RowMatrix<T>, Eigen::Unaligned, Eigen::OuterStride<>>;

namespace detail {

template <typename T>
void gemm_block(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a,
                std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c, std::int64_t ldc) {
  ConstMatMap<T> A(a, trans_a ? k : m, trans_a ? m : k, Eigen::OuterStride<>(lda));
  ConstMatMap<T> B(b, trans_b ? n : k, trans_b ? k : n, Eigen::OuterStride<>(ldb));
  MatMap<T> C(c, m, n, Eigen::OuterStride<>(ldc));
  if (beta == T(0))
    C.setZero();
  else if (beta != T(1))
    C *= beta;
  if (k == 0) return;
  if (!trans_a && !trans_b)
    C.noalias() += alpha * A * B;
  else if (trans_a && !trans_b)
    C.noalias() += alpha * A.transpose() * B;
  else if (!trans_a && trans_b)
    C.noalias() += alpha * A * B.transpose();
  else
    C.noalias() += alpha * A.transpose() * B.transpose();
}

}  // namespace detail

/// Row-major GEMM: C[m,n] = alpha * op(A) op(B) + beta * C, op(X) = X or X^T.
/// A is [m,k] (or [k,m] if trans_a), B is [k,n] (or [n,k] if trans_b). When beta is 0, C
/// is not read. `parallel` = false keeps the product on the calling thread (for callers
/// that already parallelise over a batch).
template <typename T>
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a,
          std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c, std::int64_t ldc, bool parallel = true) {
  tinynet::detail::apply_fp_mode();
  // Below ~4 MFLOP one thread finishes before a second would start paying off.
  const bool split = parallel && m * n * k > (std::int64_t{1} << 21) && get_num_threads() > 1;
  if (!split) {
    detail::gemm_block(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  // One block per thread: each block packs the shared operand again, so more blocks cost
  // more than the balance they buy.
  const std::int64_t parts = get_num_threads();
  if (m >= n) {
    const std::int64_t rows = (m + parts - 1) / parts;
    parallel_for((m + rows - 1) / rows, 1, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t p = lo; p < hi; ++p) {
        const std::int64_t r0 = p * rows, r1 = std::min(m, r0 + rows);
        const T* ap = trans_a ? a + r0 : a + r0 * lda;
        detail::gemm_block(trans_a, trans_b, r1 - r0, n, k, alpha, ap, lda, b, ldb, beta, c + r0 * ldc, ldc);
      }
    });
  } else {
    const std::int64_t cols = (n + parts - 1) / parts;
    parallel_for((n + cols - 1) / cols, 1, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t p = lo; p < hi; ++p) {
        const std::int64_t c0 = p * cols, c1 = std::min(n, c0 + cols);
        const T* bp = trans_b ? b + c0 * ldb : b + c0;
        detail::gemm_block(trans_a, trans_b, m, c1 - c0, k, alpha, a, lda, bp, ldb, beta, c + c0, ldc);
      }
    });
  }
}

}  // namespace tinynet::backend::cpu
