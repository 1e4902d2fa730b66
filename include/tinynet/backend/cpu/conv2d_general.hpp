#pragma once
/// \file
/// Direct conv2d kernels for any groups and dilation (NCHW, float32 and float64): the path
/// of the geometries the specialised kernels in conv2d.hpp are not written for
/// (Conv2dGeometry::plain() is false). Each output plane, input-gradient plane and weight
/// slice is one task, summed in a fixed order, so results do not depend on the threads.
/// A depthwise convolution (groups = channels) reads kh * kw inputs per output here.

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "tinynet/backend/conv2d.hpp"
#include "tinynet/backend/products.hpp"
#include "tinynet/core/bfloat16.hpp"
#include "tinynet/core/parallel.hpp"

namespace tinynet::backend::cpu::detail {

/// v as a product operand: float32 rounded to bfloat16 under Products::bfloat16.
template <typename T>
T product_operand(T v, Products products) {
  if constexpr (std::is_same_v<T, float>)
    return products == Products::bfloat16 ? tinynet::detail::round_to_bf16(v) : v;
  else
    return v;
}

/// The outputs [lo, hi) of an axis of `out` outputs whose input o*stride + offset lies in [0, n).
inline void valid_range(std::int64_t n, std::int64_t out, std::int64_t stride, std::int64_t offset, std::int64_t& lo,
                        std::int64_t& hi) {
  const auto ceil_div = [stride](std::int64_t a) { return a <= 0 ? std::int64_t{0} : (a + stride - 1) / stride; };
  lo = std::min(out, ceil_div(-offset));
  hi = std::max(lo, std::min(out, ceil_div(n - offset)));
}

/// Calls tap(i, j, oy0, oy1, ox0, ox1, offset_y, offset_x) for every kernel tap with the
/// outputs whose input (oy*sh + offset_y, ox*sw + offset_x) lies inside the image.
template <typename Tap>
void for_each_tap(const Conv2dGeometry& g, Tap&& tap) {
  for (std::int64_t i = 0; i < g.kh; ++i) {
    const std::int64_t offset_y = i * g.dil_h - g.ph;
    std::int64_t oy0, oy1;
    valid_range(g.h, g.oh, g.sh, offset_y, oy0, oy1);
    for (std::int64_t j = 0; j < g.kw; ++j) {
      const std::int64_t offset_x = j * g.dil_w - g.pw;
      std::int64_t ox0, ox1;
      valid_range(g.w, g.ow, g.sw, offset_x, ox0, ox1);
      tap(i, j, oy0, oy1, ox0, ox1, offset_y, offset_x);
    }
  }
}

/// The output gradient at flat index e, zero where a fused ReLU's output y_relu is not > 0.
template <typename T>
T masked_gradient(const T* gy, const T* y_relu, std::int64_t e) {
  return y_relu != nullptr && !(y_relu[e] > T(0)) ? T(0) : gy[e];
}

}  // namespace tinynet::backend::cpu::detail

namespace tinynet::backend::cpu {

// y[n,o,oy,ox] = b[o] + sum_{ci,i,j} W[o,ci,i,j] x[n, grp*Cg+ci, oy*sh-ph+i*dh, ox*sw-pw+j*dw],
// grp = o / (out_c / groups): one task per output plane.
template <typename T>
void conv2d_general_forward(const Conv2dGeometry& g, const T* x, const T* w, const T* b, T* y, bool relu,
                            Products products) {
  const std::int64_t plane = g.oh * g.ow;
  parallel_for(g.n * g.out_c, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t e = lo; e < hi; ++e) {
      const std::int64_t n = e / g.out_c, o = e % g.out_c, first_in = (o / g.group_out()) * g.group_in();
      T* out = y + e * plane;
      std::fill(out, out + plane, b != nullptr ? b[o] : T(0));
      for (std::int64_t ci = 0; ci < g.group_in(); ++ci) {
        const T* in = x + ((n * g.c + first_in + ci) * g.h) * g.w;
        const T* wk = w + (o * g.group_in() + ci) * g.kh * g.kw;
        detail::for_each_tap(g, [&](auto i, auto j, auto oy0, auto oy1, auto ox0, auto ox1, auto dy, auto dx) {
          const T wv = detail::product_operand(wk[i * g.kw + j], products);
          for (std::int64_t oy = oy0; oy < oy1; ++oy) {
            const T* row = in + (oy * g.sh + dy) * g.w + dx;
            T* orow = out + oy * g.ow;
            for (std::int64_t ox = ox0; ox < ox1; ++ox)
              orow[ox] += wv * detail::product_operand(row[ox * g.sw], products);
          }
        });
      }
      if (relu)
        for (std::int64_t p = 0; p < plane; ++p) out[p] = out[p] > T(0) ? out[p] : T(0);
    }
  });
}

// dx[n,c,iy,ix] (+)= sum over the outputs of c's group and the taps that read (iy, ix) of
// W[o, c % Cg, i, j] gy[n,o,oy,ox]: one task per input plane, which it alone writes.
template <typename T>
void conv2d_general_input_grad(const Conv2dGeometry& g, const T* w, const T* gy, const T* y_relu, T* dx,
                               bool accumulate, Products products) {
  const std::int64_t plane = g.h * g.w;
  parallel_for(g.n * g.c, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t e = lo; e < hi; ++e) {
      const std::int64_t n = e / g.c, ch = e % g.c, ci = ch % g.group_in(),
                         first_out = (ch / g.group_in()) * g.group_out();
      T* d = dx + e * plane;
      if (!accumulate) std::fill(d, d + plane, T(0));
      for (std::int64_t o = first_out; o < first_out + g.group_out(); ++o) {
        const std::int64_t gy_at = (n * g.out_c + o) * g.oh * g.ow;
        const T* wk = w + (o * g.group_in() + ci) * g.kh * g.kw;
        detail::for_each_tap(g, [&](auto i, auto j, auto oy0, auto oy1, auto ox0, auto ox1, auto dy, auto dxo) {
          const T wv = detail::product_operand(wk[i * g.kw + j], products);
          for (std::int64_t oy = oy0; oy < oy1; ++oy) {
            T* row = d + (oy * g.sh + dy) * g.w + dxo;
            for (std::int64_t ox = ox0; ox < ox1; ++ox)
              row[ox * g.sw] +=
                  wv * detail::product_operand(detail::masked_gradient(gy, y_relu, gy_at + oy * g.ow + ox), products);
          }
        });
      }
    }
  });
}

// dW[o,ci,i,j] (+)= sum_{n,oy,ox} gy[n,o,oy,ox] x[n, grp*Cg+ci, oy*sh-ph+i*dh, ox*sw-pw+j*dw];
// db[o] (+)= sum_{n,oy,ox} gy[n,o,oy,ox]: one task per output channel, samples in order.
template <typename T>
void conv2d_general_param_grads(const Conv2dGeometry& g, const T* x, const T* gy, const T* y_relu, T* dw, bool acc_dw,
                                T* db, bool acc_db, Products products) {
  const std::int64_t taps = g.kh * g.kw;
  parallel_for(g.out_c, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t o = lo; o < hi; ++o) {
      const std::int64_t first_in = (o / g.group_out()) * g.group_in();
      T* dwo = dw != nullptr ? dw + o * g.weight_cols() : nullptr;
      if (dwo != nullptr && !acc_dw) std::fill(dwo, dwo + g.weight_cols(), T(0));
      T bias_sum = T(0);
      for (std::int64_t n = 0; n < g.n; ++n) {
        const std::int64_t gy_at = (n * g.out_c + o) * g.oh * g.ow;
        if (db != nullptr)
          for (std::int64_t p = 0; p < g.oh * g.ow; ++p) bias_sum += detail::masked_gradient(gy, y_relu, gy_at + p);
        if (dwo == nullptr) continue;
        for (std::int64_t ci = 0; ci < g.group_in(); ++ci) {
          const T* in = x + ((n * g.c + first_in + ci) * g.h) * g.w;
          detail::for_each_tap(g, [&](auto i, auto j, auto oy0, auto oy1, auto ox0, auto ox1, auto dy, auto dxo) {
            T sum = T(0);
            for (std::int64_t oy = oy0; oy < oy1; ++oy) {
              const T* row = in + (oy * g.sh + dy) * g.w + dxo;
              for (std::int64_t ox = ox0; ox < ox1; ++ox)
                sum += detail::product_operand(detail::masked_gradient(gy, y_relu, gy_at + oy * g.ow + ox), products) *
                       detail::product_operand(row[ox * g.sw], products);
            }
            dwo[ci * taps + i * g.kw + j] += sum;
          });
        }
      }
      if (db != nullptr) db[o] = acc_db ? db[o] + bias_sum : bias_sum;
    }
  });
}

}  // namespace tinynet::backend::cpu
