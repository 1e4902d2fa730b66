#pragma once
/// \file
/// Kernels of linear (y = x W^T + b) and matmul, on the shared GEMM.

#include <cstdint>

#include "tinynet/backend/cpu/gemm.hpp"

namespace tinynet::backend::cpu {

/// y[n,o] = sum_i x[n,i] w[o,i] + b[o]   (b may be null)
template <typename T>
void linear_forward(const T* x, const T* w, const T* b, T* y, std::int64_t batch, std::int64_t in, std::int64_t out) {
  if (b != nullptr)
    for (std::int64_t n = 0; n < batch; ++n)
      for (std::int64_t o = 0; o < out; ++o) y[n * out + o] = b[o];
  gemm<T>(false, true, batch, out, in, T(1), x, in, w, in, b != nullptr ? T(1) : T(0), y, out);
}

/// dx (+)= gy W
template <typename T>
void linear_backward_input(const T* gy, const T* w, T* dx, std::int64_t batch, std::int64_t in, std::int64_t out,
                           bool accumulate) {
  gemm<T>(false, false, batch, in, out, T(1), gy, out, w, in, accumulate ? T(1) : T(0), dx, in);
}

/// dW (+)= gy^T x
template <typename T>
void linear_backward_weight(const T* gy, const T* x, T* dw, std::int64_t batch, std::int64_t in, std::int64_t out,
                            bool accumulate) {
  gemm<T>(true, false, out, in, batch, T(1), gy, out, x, in, accumulate ? T(1) : T(0), dw, in);
}

/// db (+)= sum_n gy[n,:]
template <typename T>
void linear_backward_bias(const T* gy, T* db, std::int64_t batch, std::int64_t out, bool accumulate) {
  for (std::int64_t o = 0; o < out; ++o) {
    T acc = accumulate ? db[o] : T(0);
    for (std::int64_t n = 0; n < batch; ++n) acc += gy[n * out + o];
    db[o] = acc;
  }
}

}  // namespace tinynet::backend::cpu
