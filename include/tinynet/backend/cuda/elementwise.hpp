#pragma once
/// \file
/// Elementwise device kernels, mirroring backend/cpu/elementwise.hpp: index loops, maps, broadcast maps,
/// and the reduction of a broadcast gradient back to its input's shape.

#include "tinynet/core/config.hpp"

#if defined(TINYNET_WITH_CUDA)

#include <cstdint>

#include "tinynet/backend/backend.hpp"
#include "tinynet/backend/cuda/detail/launch.hpp"
#include "tinynet/core/shape.hpp"

namespace tinynet::backend::cuda {

namespace detail {

template <typename T, typename U, typename F>
struct ZipMap {
  const T* a;
  const T* b;
  U* out;
  bool accumulate;
  F f;
  TINYNET_HOST_DEVICE void operator()(std::int64_t i) const {
    const U v = f(a[i], b[i]);
    out[i] = accumulate ? static_cast<U>(out[i] + v) : v;
  }
};

template <typename T>
struct CopyOrAdd {
  const T* src;
  T* dst;
  bool accumulate;
  TINYNET_HOST_DEVICE void operator()(std::int64_t i) const {
    using C = compute_t<T>;  // bfloat16 sums in float, rounded once
    dst[i] = accumulate ? T(static_cast<C>(dst[i]) + static_cast<C>(src[i])) : src[i];
  }
};

/// Offsets of output index i into the two broadcast inputs.
TINYNET_HOST_DEVICE inline void broadcast_offsets(const Dims& d, std::int64_t i, std::int64_t& oa, std::int64_t& ob) {
  oa = ob = 0;
  for (int k = d.rank - 1; k >= 0; --k) {
    const std::int64_t c = i % d.extent[k];
    i /= d.extent[k];
    oa += c * d.stride_a[k];
    ob += c * d.stride_b[k];
  }
}

template <typename T, typename U, typename F>
struct BroadcastMap {
  const T* a;
  const T* b;
  U* out;
  Dims d;
  F f;
  TINYNET_HOST_DEVICE void operator()(std::int64_t i) const {
    std::int64_t oa, ob;
    broadcast_offsets(d, i, oa, ob);
    out[i] = f(a[oa], b[ob]);
  }
};

/// dst[j] (+)= sum of src over the reduced dims: d.extent is src's shape, stride_a maps a
/// source coordinate to dst (0 on reduced dims), stride_b is 1 on reduced dims.
template <typename T>
struct SumTo {
  const T* src;
  T* dst;
  Dims d;         // extent: source shape; stride_a: source strides
  Dims dst_dims;  // extent: destination extents aligned to the source rank (1 = reduced)
  std::int64_t reduced;
  bool accumulate;
  TINYNET_HOST_DEVICE void operator()(std::int64_t j) const {
    // Coordinates of dst element j on its kept dims.
    std::int64_t coord[Dims::kMax] = {};
    std::int64_t rest = j;
    for (int k = d.rank - 1; k >= 0; --k) {
      coord[k] = rest % dst_dims.extent[k];
      rest /= dst_dims.extent[k];
    }
    T acc = accumulate ? dst[j] : T(0);
    for (std::int64_t r = 0; r < reduced; ++r) {
      std::int64_t rr = r, off = 0;
      for (int k = d.rank - 1; k >= 0; --k) {
        std::int64_t c = coord[k];
        if (dst_dims.extent[k] == 1 && d.extent[k] != 1) {
          c = rr % d.extent[k];
          rr /= d.extent[k];
        }
        off += c * d.stride_a[k];
      }
      acc += src[off];
    }
    dst[j] = acc;
  }
};

}  // namespace detail

/// f(i) for every i in [0, n), as one device kernel.
template <typename F>
void for_each_index(Tag, std::int64_t n, const F& f) {
  for_each_index(n, f);
}

/// out[i] (+)= f(a[i], b[i]); U is T, or bool for the comparisons.
template <typename T, typename U, typename F>
void zip_map(Tag, const T* a, const T* b, U* out, std::int64_t n, bool accumulate, F f) {
  for_each_index(n, detail::ZipMap<T, U, F>{a, b, out, accumulate, f});
}

/// dst = src, or dst += src.
template <typename T>
void copy_or_add(Tag, const T* src, T* dst, std::int64_t n, bool accumulate) {
  for_each_index(n, detail::CopyOrAdd<T>{src, dst, accumulate});
}

/// Row-major strides of `s` read as broadcast to `out` (0 on broadcast dims), aligned right.
inline void broadcast_strides(const Shape& s, const Shape& out, std::int64_t* strides) {
  std::int64_t stride = 1;
  for (int d = out.rank() - 1, di = s.rank() - 1; d >= 0; --d, --di) {
    strides[d] = di >= 0 && s[di] != 1 ? stride : 0;
    if (di >= 0) stride *= s[di];
  }
}

/// out[i] = f(a[bcast i], b[bcast i]) over the broadcast shape `os` (U as for zip_map).
template <typename T, typename U, typename F>
void broadcast_map(Tag, const T* a, const Shape& as, const T* b, const Shape& bs, U* out, const Shape& os, F f) {
  Dims d;
  d.rank = os.rank();
  for (int k = 0; k < d.rank; ++k) d.extent[k] = os[k];
  broadcast_strides(as, os, d.stride_a);
  broadcast_strides(bs, os, d.stride_b);
  for_each_index(os.numel(), detail::BroadcastMap<T, U, F>{a, b, out, d, f});
}

/// dst (shape ds) (+)= src (shape ss) summed over the dims along which ds was broadcast to ss.
template <typename T>
void sum_to(Tag, const T* src, const Shape& ss, T* dst, const Shape& ds, bool accumulate) {
  Dims d, dd;
  d.rank = dd.rank = ss.rank();
  std::int64_t stride = 1, reduced = 1;
  for (int k = ss.rank() - 1, kd = ds.rank() - 1; k >= 0; --k, --kd) {
    d.extent[k] = ss[k];
    d.stride_a[k] = stride;
    stride *= ss[k];
    dd.extent[k] = kd >= 0 ? ds[kd] : 1;
    if (dd.extent[k] == 1 && ss[k] != 1) reduced *= ss[k];
  }
  for_each_index(ds.numel(), detail::SumTo<T>{src, dst, d, dd, reduced, accumulate});
}

}  // namespace tinynet::backend::cuda

#endif  // TINYNET_WITH_CUDA
