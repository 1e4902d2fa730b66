#pragma once
/// \file
/// Scalar types a tensor can hold, and the dispatch from a run-time dtype to a
/// kernel templated on the C++ type.

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <type_traits>

#include "tinynet/core/error.hpp"

namespace tinynet {

/// Element type of a tensor. float32 trains; float64 exists for tight gradient checks;
/// the integer types hold class labels and argmax indices.
enum class DType : std::uint8_t { float32, float64, int32, int64 };

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
  }
  return "?";
}

inline std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

constexpr bool is_floating(DType t) { return t == DType::float32 || t == DType::float64; }

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
  else
    static_assert(sizeof(T) == 0, "tinynet tensors hold float, double, int32_t or int64_t");
}

/// Calls `f.template operator()<T>()` with T the floating type of `t`;
/// throws TypeError naming `op` for integer dtypes.
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
  throw TypeError(detail::concat(op, ": expected a float32 or float64 tensor, got ", t));
}

/// Like dispatch_floating, for every dtype.
template <typename F>
decltype(auto) dispatch_all(DType t, F&& f) {
  switch (t) {
    case DType::float32:
      return f.template operator()<float>();
    case DType::float64:
      return f.template operator()<double>();
    case DType::int32:
      return f.template operator()<std::int32_t>();
    case DType::int64:
      return f.template operator()<std::int64_t>();
  }
  throw TypeError("unknown dtype");
}

}  // namespace tinynet
