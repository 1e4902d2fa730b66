#pragma once
/// \file
/// Device kernels of linear (y = x W^T + b) and matmul, on cuBLAS, mirroring
/// backend/cpu/linear.hpp.

#include "tinynet/core/config.hpp"

#if defined(TINYNET_WITH_CUDA)

#include <cstdint>

#include "tinynet/backend/backend.hpp"
#include "tinynet/backend/cuda/detail/gemm.hpp"
#include "tinynet/backend/cuda/detail/launch.hpp"

namespace tinynet::backend::cuda {

namespace detail {

template <typename T>
struct FillRows {  // y[r, o] = b[o]
  const T* b;
  T* y;
  std::int64_t cols;
  TINYNET_HOST_DEVICE void operator()(std::int64_t e) const { y[e] = b[e % cols]; }
};

template <typename T>
struct SumRows {  // db[o] (+)= sum_r gy[r, o]
  const T* gy;
  T* db;
  std::int64_t rows, cols;
  bool accumulate;
  TINYNET_HOST_DEVICE void operator()(std::int64_t o) const {
    T acc = accumulate ? db[o] : T(0);
    for (std::int64_t r = 0; r < rows; ++r) acc += gy[r * cols + o];
    db[o] = acc;
  }
};

}  // namespace detail

/// y[n,o] = sum_i x[n,i] w[o,i] + b[o]   (b may be null)
template <typename T>
void linear_forward(Tag, const T* x, const T* w, const T* b, T* y, std::int64_t batch, std::int64_t in,
                    std::int64_t out, Products products) {
  if (b != nullptr) for_each_index(batch * out, detail::FillRows<T>{b, y, out});
  gemm<T>(false, true, batch, out, in, T(1), x, in, w, in, b != nullptr ? T(1) : T(0), y, out, products);
}

/// dx (+)= gy W
template <typename T>
void linear_backward_input(Tag, const T* gy, const T* w, T* dx, std::int64_t batch, std::int64_t in, std::int64_t out,
                           bool accumulate, Products products) {
  gemm<T>(false, false, batch, in, out, T(1), gy, out, w, in, accumulate ? T(1) : T(0), dx, in, products);
}

/// dW (+)= gy^T x
template <typename T>
void linear_backward_weight(Tag, const T* gy, const T* x, T* dw, std::int64_t batch, std::int64_t in, std::int64_t out,
                            bool accumulate, Products products) {
  gemm<T>(true, false, out, in, batch, T(1), gy, out, x, in, accumulate ? T(1) : T(0), dw, in, products);
}

/// db (+)= sum_n gy[n,:]
template <typename T>
void linear_backward_bias(Tag, const T* gy, T* db, std::int64_t batch, std::int64_t out, bool accumulate) {
  for_each_index(out, detail::SumRows<T>{gy, db, batch, out, accumulate});
}

/// c[m,n] (+)= op(a) op(b), op(a) [m,k] and op(b) [k,n]; a is stored [k,m] when trans_a,
/// b is stored [n,k] when trans_b (matmul and its two gradients).
template <typename T>
void matmul(Tag, const T* a, const T* b, T* c, std::int64_t m, std::int64_t k, std::int64_t n, bool trans_a,
            bool trans_b, bool accumulate, Products products) {
  gemm<T>(trans_a, trans_b, m, n, k, T(1), a, trans_a ? m : k, b, trans_b ? k : n, accumulate ? T(1) : T(0), c, n,
          products);
}

}  // namespace tinynet::backend::cuda

#endif  // TINYNET_WITH_CUDA
