#pragma once
/// \file
/// An operand of autocast's bfloat16 products, as every vector level prepares it
/// (simd/bf16_operands.inl), and the buffer that takes.

#include <cstdint>

namespace tinynet::backend::cpu {

/// A prepared operand: where it is and the distance between its rows, in its own units
/// (bfloat16 elements, bfloat16 pairs, or floats holding bfloat16 values).
struct Bf16Operand {
  const void* data = nullptr;
  std::int64_t ld = 0;
};

/// Floats of buffer that one operand of rows x cols takes, in any of its layouts.
inline std::int64_t bf16_operand_floats(std::int64_t rows, std::int64_t cols) { return (rows + 1) * (cols + 1) + 16; }

}  // namespace tinynet::backend::cpu
