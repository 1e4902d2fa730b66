#pragma once
/// \file
/// The per-element rules of the comparisons and of where(), written once for both
/// backends. Comparisons run through the elementwise kernels (zip_map, broadcast_map) with
/// a bool output; where() through for_each_index.

#include <cstdint>

#include "tinynet/core/config.hpp"
#include "tinynet/core/dtype.hpp"

namespace tinynet::backend {

enum class Comparison { eq, ne, lt, le, gt, ge };

/// a op b, as the C++ operator on T: NaN compares unequal to everything, ne gives true.
struct Compare {
  Comparison op;
  template <typename T>
  TINYNET_HOST_DEVICE bool operator()(T a, T b) const {
    switch (op) {
      case Comparison::eq:
        return a == b;
      case Comparison::ne:
        return a != b;
      case Comparison::lt:
        return a < b;
      case Comparison::le:
        return a <= b;
      case Comparison::gt:
        return a > b;
      case Comparison::ge:
        return a >= b;
    }
    return false;
  }
};

/// out[i] = cond[i] ? a[i] : b[i] (operands broadcast to one shape beforehand).
template <typename T>
struct WhereSelect {
  const bool* cond;
  const T* a;
  const T* b;
  T* out;
  TINYNET_HOST_DEVICE void operator()(std::int64_t i) const { out[i] = cond[i] ? a[i] : b[i]; }
};

/// where's backward for one branch: d[i] (+)= cond[i] == pick ? g[i] : 0.
template <typename T>
struct WhereGrad {
  const bool* cond;
  const T* g;
  T* d;
  bool pick;
  bool accumulate;
  TINYNET_HOST_DEVICE void operator()(std::int64_t i) const {
    const T v = cond[i] == pick ? g[i] : T(0);
    d[i] = accumulate ? d[i] + v : v;
  }
};

}  // namespace tinynet::backend
