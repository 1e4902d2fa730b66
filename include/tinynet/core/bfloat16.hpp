#pragma once
/// \file
/// bfloat16: the upper 16 bits of an IEEE float32 (8 exponent bits, 7 mantissa bits), the
/// type autocast runs products in. Conversion from float rounds to nearest, ties to even,
/// as PyTorch and the AVX512-BF16 instructions (vcvtne2ps2bf16) do; NaN stays NaN.
/// Conversion from double and from integers rounds once, to the nearest bfloat16 of the
/// exact value (not twice, through float).

#include <cstdint>
#include <cstring>
#include <ostream>
#include <type_traits>

#include "tinynet/core/config.hpp"

namespace tinynet {

namespace detail {

/// The bits of the bfloat16 nearest to f (ties to even); a NaN becomes a quiet NaN of
/// the same sign (truncating could clear every mantissa bit and make it an infinity).
TINYNET_HOST_DEVICE inline std::uint16_t float_to_bf16_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

/// The float whose upper bits are b (exact: every bfloat16 is a float).
TINYNET_HOST_DEVICE inline float bf16_bits_to_float(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// f rounded to the nearest bfloat16, as a float.
TINYNET_HOST_DEVICE inline float round_to_bf16(float f) { return bf16_bits_to_float(float_to_bf16_bits(f)); }

/// dst[i] = src[i] rounded to the nearest bfloat16, for n floats (dst may be src).
inline void round_to_bf16(const float* src, std::int64_t n, float* dst) {
  for (std::int64_t i = 0; i < n; ++i) dst[i] = round_to_bf16(src[i]);
}

/// d cut to float toward zero, with the last mantissa bit set when that dropped anything
/// ("round to odd"). Rounding this float to bfloat16 (16 bits shorter) gives the bfloat16
/// nearest d: the set bit keeps a value just above or below a tie from looking like one.
TINYNET_HOST_DEVICE inline float round_to_odd_float(double d) {
  const float f = static_cast<float>(d);
  if (d != d || static_cast<double>(f) == d) return f;
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  const bool away = d > 0 ? static_cast<double>(f) > d : static_cast<double>(f) < d;  // |f| > |d|
  if (away) u -= 1;  // one step toward zero (an infinity becomes the largest finite float)
  u |= 1u;
  float r;
  std::memcpy(&r, &u, sizeof r);
  return r;
}

/// The bits of the bfloat16 nearest to d (ties to even).
TINYNET_HOST_DEVICE inline std::uint16_t double_to_bf16_bits(double d) {
  return float_to_bf16_bits(round_to_odd_float(d));
}

/// The bits of the bfloat16 nearest to the integer of magnitude m (negated when
/// `negative`): m is first cut to 53 bits with a sticky last bit, which double holds exactly.
TINYNET_HOST_DEVICE inline std::uint16_t integer_to_bf16_bits(std::uint64_t m, bool negative) {
  int shift = 0;
  std::uint64_t sticky = 0;
  while (m >> 53) {
    sticky |= m & 1u;
    m >>= 1;
    ++shift;
  }
  const double d = static_cast<double>(m | sticky) * static_cast<double>(std::uint64_t{1} << shift);
  return double_to_bf16_bits(negative ? -d : d);
}

/// The built-in number types (bool, the integers, the floating types).
template <typename T>
concept Arithmetic = std::is_arithmetic_v<T>;

/// The bits of the bfloat16 nearest to v, for any arithmetic type.
template <typename T>
TINYNET_HOST_DEVICE std::uint16_t to_bf16_bits(T v) {
  if constexpr (std::is_same_v<T, float>) {
    return float_to_bf16_bits(v);
  } else if constexpr (std::is_floating_point_v<T>) {
    return double_to_bf16_bits(static_cast<double>(v));
  } else if constexpr (std::is_signed_v<T>) {
    const auto i = static_cast<std::int64_t>(v);
    return integer_to_bf16_bits(
        i < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(i) : static_cast<std::uint64_t>(i), i < 0);
  } else {
    return integer_to_bf16_bits(static_cast<std::uint64_t>(v), false);
  }
}

}  // namespace detail

/// A bfloat16 value: storage and conversions; arithmetic goes through float.
/// Converts explicitly from and to every arithmetic type: `bfloat16(x)`,
/// `static_cast<double>(b)`; to a type other than float it goes through float (exact).
struct bfloat16 {
  std::uint16_t bits = 0;

  bfloat16() = default;
  /// The bfloat16 nearest to v (ties to even; NaN stays NaN).
  template <detail::Arithmetic T>
  TINYNET_HOST_DEVICE explicit bfloat16(T v) : bits(detail::to_bf16_bits(v)) {}
  /// The value as T, through float (exact for float and double).
  template <detail::Arithmetic T>
  TINYNET_HOST_DEVICE explicit operator T() const {
    return static_cast<T>(detail::bf16_bits_to_float(bits));
  }

  /// The value with exactly these bits.
  TINYNET_HOST_DEVICE static bfloat16 from_bits(std::uint16_t b) {
    bfloat16 v;
    v.bits = b;
    return v;
  }
  /// Compares values, as float does: NaN equals nothing, -0 equals +0.
  friend bool operator==(bfloat16 a, bfloat16 b) { return static_cast<float>(a) == static_cast<float>(b); }
};

static_assert(sizeof(bfloat16) == 2, "bfloat16 is stored in two bytes");

inline std::ostream& operator<<(std::ostream& os, bfloat16 v) { return os << static_cast<float>(v); }

}  // namespace tinynet
