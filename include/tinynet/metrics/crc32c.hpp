#pragma once
/// \file
/// CRC-32C (Castagnoli), the checksum TensorBoard's record files use, and the "masked"
/// form they store: a CRC of data that itself holds CRCs is a poor check, so the stored
/// value is rotated and offset.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace tinynet::metrics {

namespace detail {

/// Byte-at-a-time table for the reflected Castagnoli polynomial 0x82F63B78.
inline constexpr std::array<std::uint32_t, 256> kCrc32cTable = [] {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1U) != 0 ? (c >> 1) ^ 0x82F63B78U : c >> 1;
    table[i] = c;
  }
  return table;
}();

}  // namespace detail

/// CRC-32C of `bytes` (crc32c("123456789") == 0xE3069283).
constexpr std::uint32_t crc32c(std::span<const std::uint8_t> bytes) {
  std::uint32_t c = 0xFFFFFFFFU;
  for (const std::uint8_t b : bytes) c = detail::kCrc32cTable[(c ^ b) & 0xFFU] ^ (c >> 8);
  return c ^ 0xFFFFFFFFU;
}

/// The masked CRC-32C TensorBoard stores: rotate right by 15 bits, add 0xA282EAD8.
constexpr std::uint32_t masked_crc32c(std::span<const std::uint8_t> bytes) {
  const std::uint32_t c = crc32c(bytes);
  return ((c >> 15) | (c << 17)) + 0xA282EAD8U;
}

}  // namespace tinynet::metrics
