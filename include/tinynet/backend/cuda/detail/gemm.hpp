#pragma once
/// \file
/// Row-major GEMM on the device: cuBLAS on a GPU, the CPU backend's Eigen GEMM on the
/// emulated device. With core/cuda/runtime.hpp this is the whole seam between the two.

#include "tinynet/core/config.hpp"

#if defined(TINYNET_WITH_CUDA)

#include <cstdint>

#include "tinynet/core/cuda/runtime.hpp"

#if defined(__CUDACC__)
#include <cublas_v2.h>
#else
#include "tinynet/backend/cpu/detail/gemm.hpp"
#endif

namespace tinynet::backend::cuda {

#if defined(__CUDACC__)
namespace detail {

inline void check_cublas(cublasStatus_t s, const char* what) {
  TINYNET_CHECK(Error, s == CUBLAS_STATUS_SUCCESS, "cuBLAS error in ", what, ": ", cublasGetStatusString(s));
}

inline cublasHandle_t cublas_handle() {
  static cublasHandle_t h = [] {
    cublasHandle_t created = nullptr;
    check_cublas(cublasCreate(&created), "cublasCreate");
    check_cublas(cublasSetStream(created, tinynet::cuda::stream()), "cublasSetStream");
    return created;
  }();
  return h;
}

}  // namespace detail
#endif

/// C[m,n] = alpha op(A) op(B) + beta C, row-major, `batch` products at once: product b
/// reads A + b*stride_a, B + b*stride_b and writes C + b*stride_c (a stride of 0 shares
/// that operand). When beta is 0, C is not read.
template <typename T>
void gemm_batched(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a,
                  std::int64_t lda, std::int64_t stride_a, const T* b, std::int64_t ldb, std::int64_t stride_b, T beta,
                  T* c, std::int64_t ldc, std::int64_t stride_c, std::int64_t batch) {
  if (m == 0 || n == 0 || batch == 0) return;
#if defined(__CUDACC__)
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const auto i = [](std::int64_t v) { return static_cast<int>(v); };
  cublasStatus_t s;
  if constexpr (sizeof(T) == 4)
    s = cublasSgemmStridedBatched(detail::cublas_handle(), op_b, op_a, i(n), i(m), i(k), &alpha, b, i(ldb), stride_b, a,
                                  i(lda), stride_a, &beta, c, i(ldc), stride_c, i(batch));
  else
    s = cublasDgemmStridedBatched(detail::cublas_handle(), op_b, op_a, i(n), i(m), i(k), &alpha, b, i(ldb), stride_b, a,
                                  i(lda), stride_a, &beta, c, i(ldc), stride_c, i(batch));
  detail::check_cublas(s, "gemm");
#else
  for (std::int64_t p = 0; p < batch; ++p)
    cpu::gemm<T>(trans_a, trans_b, m, n, k, alpha, a + p * stride_a, lda, b + p * stride_b, ldb, beta, c + p * stride_c,
                 ldc);
#endif
}

/// One row-major GEMM (see gemm_batched).
template <typename T>
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a,
          std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c, std::int64_t ldc) {
  gemm_batched<T>(trans_a, trans_b, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1);
}

}  // namespace tinynet::backend::cuda

#endif  // TINYNET_WITH_CUDA
