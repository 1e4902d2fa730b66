#pragma once
/// \file
/// Row-major GEMM on the device: cuBLAS on a GPU, the CPU backend's Eigen GEMM on the
/// emulated device. With core/cuda/runtime.hpp this is the whole seam between the two.
/// With bfloat16 products (autocast) the float32 operands are rounded to bfloat16 first:
/// on a GPU into __nv_bfloat16 copies that cuBLAS multiplies with float32 sums
/// (cublasGemmStridedBatchedEx, CUBLAS_COMPUTE_32F); on the emulated device into
/// float32 copies holding bfloat16 values, for the CPU GEMM.

#include "tinynet/core/config.hpp"

#if defined(TINYNET_WITH_CUDA)

#include <cstdint>
#include <type_traits>
#include <vector>

#include "tinynet/backend/cuda/detail/scratch.hpp"
#include "tinynet/backend/products.hpp"
#include "tinynet/core/bfloat16.hpp"
#include "tinynet/core/cuda/runtime.hpp"

#if defined(__CUDACC__)
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <thrust/transform.h>
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

struct ToBf16 {
  __device__ __nv_bfloat16 operator()(float v) const { return __float2bfloat16_rn(v); }
};

/// A bfloat16 copy of n floats, in the device's caching allocator and made on the stream
/// without waiting, like every other kernel. (A thrust::device_vector per product, with its
/// cudaMalloc, its fill and a cudaFree that waits for the device, made an autocast step on
/// an H100 2.5 times slower than a float32 one.)
class Bf16Copy {
 public:
  Bf16Copy(const float* src, std::int64_t n) : copy_(n) {
    thrust::transform(tinynet::cuda::policy(), src, src + n, copy_.data(), ToBf16{});
  }
  const __nv_bfloat16* data() const { return copy_.data(); }

 private:
  DeviceScratch<__nv_bfloat16> copy_;
};

}  // namespace detail
#endif

namespace detail {

/// Elements from the first of `batch` operands of rows x ld, `stride` apart, to the end of
/// the last.
inline std::int64_t operand_span(std::int64_t rows, std::int64_t ld, std::int64_t stride, std::int64_t batch) {
  return (batch - 1) * stride + rows * ld;
}

}  // namespace detail

/// C[m,n] = alpha op(A) op(B) + beta C, row-major, `batch` products at once: product b
/// reads A + b*stride_a, B + b*stride_b and writes C + b*stride_c (a stride of 0 shares
/// that operand). When beta is 0, C is not read. `products`: see backend/products.hpp.
template <typename T>
void gemm_batched(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a,
                  std::int64_t lda, std::int64_t stride_a, const T* b, std::int64_t ldb, std::int64_t stride_b, T beta,
                  T* c, std::int64_t ldc, std::int64_t stride_c, std::int64_t batch,
                  Products products = Products::as_input) {
  if (m == 0 || n == 0 || batch == 0) return;
  const bool bf16 = std::is_same_v<T, float> && products == Products::bfloat16 && k > 0;
  const std::int64_t span_a = detail::operand_span(trans_a ? k : m, lda, stride_a, batch),
                     span_b = detail::operand_span(trans_b ? n : k, ldb, stride_b, batch);
#if defined(__CUDACC__)
  if constexpr (std::is_same_v<T, float>) {
    if (bf16) {
      const detail::Bf16Copy a16(a, span_a), b16(b, span_b);
      const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
      const auto i = [](std::int64_t v) { return static_cast<int>(v); };
      detail::check_cublas(
          cublasGemmStridedBatchedEx(detail::cublas_handle(), op_b, op_a, i(n), i(m), i(k), &alpha, b16.data(),
                                     CUDA_R_16BF, i(ldb), stride_b, a16.data(), CUDA_R_16BF, i(lda), stride_a, &beta, c,
                                     CUDA_R_32F, i(ldc), stride_c, i(batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "gemm (bfloat16)");
      return;
    }
  }
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
  std::vector<T> rounded;  // the emulated device's memory is the host's
  if constexpr (std::is_same_v<T, float>) {
    if (bf16) {
      rounded.resize(static_cast<std::size_t>(span_a + span_b));
      tinynet::detail::round_to_bf16(a, span_a, rounded.data());
      tinynet::detail::round_to_bf16(b, span_b, rounded.data() + span_a);
      a = rounded.data();
      b = rounded.data() + span_a;
    }
  }
  for (std::int64_t p = 0; p < batch; ++p)
    cpu::gemm<T>(trans_a, trans_b, m, n, k, alpha, a + p * stride_a, lda, b + p * stride_b, ldb, beta, c + p * stride_c,
                 ldc);
#endif
}

/// One row-major GEMM (see gemm_batched).
template <typename T>
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a,
          std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c, std::int64_t ldc,
          Products products = Products::as_input) {
  gemm_batched<T>(trans_a, trans_b, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1, products);
}

}  // namespace tinynet::backend::cuda

#endif  // TINYNET_WITH_CUDA
