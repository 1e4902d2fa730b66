#pragma once
/// \file
/// bfloat16: the upper 16 bits of an IEEE float32 (8 exponent bits, 7 mantissa bits), the
/// type autocast runs products in. Conversion from float rounds to nearest, ties to even,
/// as PyTorch and the AVX512-BF16 instructions (vcvtne2ps2bf16) do; NaN stays NaN.

#include <cstdint>
#include <cstring>
#include <ostream>

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

}  // namespace detail

/// A bfloat16 value: storage and conversions; arithmetic goes through float.
struct bfloat16 {
  std::uint16_t bits = 0;

  bfloat16() = default;
  TINYNET_HOST_DEVICE explicit bfloat16(float f) : bits(detail::float_to_bf16_bits(f)) {}
  TINYNET_HOST_DEVICE explicit operator float() const { return detail::bf16_bits_to_float(bits); }

  /// The value with exactly these bits.
  TINYNET_HOST_DEVICE static bfloat16 from_bits(std::uint16_t b) {
    bfloat16 v;
    v.bits = b;
    return v;
  }
  friend bool operator==(bfloat16 a, bfloat16 b) { return static_cast<float>(a) == static_cast<float>(b); }
};

static_assert(sizeof(bfloat16) == 2, "bfloat16 is stored in two bytes");

inline std::ostream& operator<<(std::ostream& os, bfloat16 v) { return os << static_cast<float>(v); }

}  // namespace tinynet
