#pragma once
/// \file
/// Scalar types a tensor can hold, and the dispatch from a run-time dtype to a
/// kernel templated on the C++ type.

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <type_traits>
#include <utility>

#include "tinynet/core/bfloat16.hpp"
#include "tinynet/core/error.hpp"

namespace tinynet {

/// Element type of a tensor. float32 trains; float64 exists for tight gradient checks;
/// the integer types hold class labels and argmax indices; bool holds the results of
/// comparisons (one byte per element, 0 or 1; masks for where, counts by sum); bfloat16 holds values (weights
/// saved or loaded at half the size, autocast's operands, activations) that kernels
/// convert to float32 for compute: the elementwise activations, pooling, dropout and views
/// take it in their kernels (dispatch_floating_and_bf16), the other ops through a float32
/// copy (ops/cast.hpp); parameters are never bfloat16. New dtypes are appended, so values
/// never change.
enum class DType : std::uint8_t { float32, float64, int32, int64, bfloat16, bool_ };

static_assert(sizeof(bool) == 1, "bool tensors store one byte per element");

constexpr std::size_t element_size(DType t) {
  switch (t) {
    case DType::float32:
      return 4;
    case DType::float64:
      return 8;
    case DType::int32:
      return 4;
    case DType::int64:
      return 8;
    case DType::bfloat16:
      return 2;
    case DType::bool_:
      return 1;
  }
  return 0;
}

constexpr const char* dtype_name(DType t) {
  switch (t) {
    case DType::float32:
      return "float32";
    case DType::float64:
      return "float64";
    case DType::int32:
      return "int32";
    case DType::int64:
      return "int64";
    case DType::bfloat16:
      return "bfloat16";
    case DType::bool_:
      return "bool";
  }
  return "?";
}

inline std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

/// float32 or float64: the dtypes the compute kernels take (and that can require grad).
/// bfloat16 holds real numbers too but is not one of them.
constexpr bool is_floating(DType t) { return t == DType::float32 || t == DType::float64; }

namespace detail {

/// What to do with a dtype no compute kernel takes: empty, or a parenthesised hint.
inline const char* compute_dtype_hint(DType t) {
  return t == DType::bfloat16 ? " (bfloat16 tensors hold values; compute runs in float32: convert with "
                                ".to(DType::float32), or run conv2d/linear/matmul under tinynet::autocast)"
                              : "";
}

}  // namespace detail

/// The DType of a C++ scalar type.
template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>)
    return DType::float32;
  else if constexpr (std::is_same_v<T, double>)
    return DType::float64;
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return DType::int32;
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return DType::int64;
  else if constexpr (std::is_same_v<T, bfloat16>)
    return DType::bfloat16;
  else if constexpr (std::is_same_v<T, bool>)
    return DType::bool_;
  else
    static_assert(sizeof(T) == 0, "tinynet tensors hold float, double, int32_t, int64_t, bool or tinynet::bfloat16");
}

/// Calls `f.template operator()<T>()` with T the floating type of `t`;
/// throws TypeError naming `op` for the integer dtypes and bfloat16 (the kernels that take
/// bfloat16 dispatch with dispatch_floating_and_bf16).
template <typename F>
decltype(auto) dispatch_floating(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::float32:
      return f.template operator()<float>();
    case DType::float64:
      return f.template operator()<double>();
    default:
      break;
  }
  throw TypeError(detail::concat(op, ": expected a float32 or float64 tensor, got ", t, detail::compute_dtype_hint(t)));
}

/// Like dispatch_floating, and T = bfloat16 for bfloat16: for the ops whose kernels also
/// take bfloat16 activations (they compute in compute_t<T>).
template <typename F>
decltype(auto) dispatch_floating_and_bf16(DType t, const char* op, F&& f) {
  if (t == DType::bfloat16) return f.template operator()<bfloat16>();
  return dispatch_floating(t, op, std::forward<F>(f));
}

/// The type a kernel computes in for elements stored as T: float for bfloat16 (each value
/// converted on load and rounded on store), T itself otherwise.
template <typename T>
using compute_t = std::conditional_t<std::is_same_v<T, bfloat16>, float, T>;

/// Like dispatch_floating, for the dtypes whose C++ type has arithmetic: float32, float64,
/// int32, int64; throws TypeError naming `op` for bfloat16.
template <typename F>
decltype(auto) dispatch_arithmetic(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::float32:
      return f.template operator()<float>();
    case DType::float64:
      return f.template operator()<double>();
    case DType::int32:
      return f.template operator()<std::int32_t>();
    case DType::int64:
      return f.template operator()<std::int64_t>();
    default:
      break;
  }
  throw TypeError(detail::concat(op, ": expected a float32, float64, int32 or int64 tensor, got ", t,
                                 detail::compute_dtype_hint(t)));
}

/// Like dispatch_arithmetic, and T = bool for bool: the dtypes that compare (comparisons,
/// argmax, where's branches take every one but bfloat16, which they read through float32).
template <typename F>
decltype(auto) dispatch_arithmetic_and_bool(DType t, const char* op, F&& f) {
  if (t == DType::bool_) return f.template operator()<bool>();
  if (t == DType::bfloat16)
    throw TypeError(detail::concat(op, ": expected a float32, float64, int32, int64 or bool tensor, got ", t));
  return dispatch_arithmetic(t, op, std::forward<F>(f));
}

/// Calls `f.template operator()<T>()` with T the integer type of `t` (std::int32_t,
/// std::int64_t or bool: the dtypes whose sums count); TypeError naming `op` otherwise.
template <typename F>
decltype(auto) dispatch_integral(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::int32:
      return f.template operator()<std::int32_t>();
    case DType::int64:
      return f.template operator()<std::int64_t>();
    case DType::bool_:
      return f.template operator()<bool>();
    default:
      break;
  }
  throw TypeError(detail::concat(op, ": expected an int32, int64 or bool tensor, got ", t));
}

/// True for the dtypes dispatch_integral takes.
constexpr bool is_integral(DType t) { return t == DType::int32 || t == DType::int64 || t == DType::bool_; }

/// The dtype two operands compute in, as PyTorch promotes them: bool < int32 < int64 <
/// bfloat16 < float32 < float64 (the wider of the two).
constexpr DType promote_types(DType a, DType b) {
  constexpr auto rank = [](DType t) {
    switch (t) {
      case DType::bool_:
        return 0;
      case DType::int32:
        return 1;
      case DType::int64:
        return 2;
      case DType::bfloat16:
        return 3;
      case DType::float32:
        return 4;
      case DType::float64:
        return 5;
    }
    return 0;
  };
  return rank(a) >= rank(b) ? a : b;
}

/// Like dispatch_floating, for every dtype: T is float, double, std::int32_t, std::int64_t,
/// bool or tinynet::bfloat16 (whose arithmetic must go through float: `static_cast<float>(x)`).
template <typename F>
decltype(auto) dispatch_all(DType t, F&& f) {
  if (t == DType::bfloat16) return f.template operator()<bfloat16>();
  return dispatch_arithmetic_and_bool(t, "dispatch_all", std::forward<F>(f));
}

}  // namespace tinynet
