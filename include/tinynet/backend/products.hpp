#pragma once
/// \file
/// How the product kernels (conv2d, linear, matmul) multiply, shared by the ops layer and
/// every backend.

#include <cstdint>

namespace tinynet::backend {

/// `as_input`: in the tensors' own type. `bfloat16` (autocast): float32 operands rounded
/// to bfloat16 (nearest, ties to even) and their products summed in float32; parameters,
/// outputs and gradients stay float32. Ignored for float64 tensors, as PyTorch's autocast
/// leaves float64 alone.
enum class Products : std::uint8_t { as_input, bfloat16 };

}  // namespace tinynet::backend
