/// \file
/// The per-level kernel sources, in dependency order; included once per vector level by
/// backend/cpu/kernels_for_isa.hpp, inside that level's namespace and target pragma.
/// No include guard: that is the point.

// The order is the dependency order, not the alphabet.
// clang-format off
#include "tinynet/backend/cpu/simd/vec.inl"
#include "tinynet/backend/cpu/simd/short_runs.inl"
#include "tinynet/backend/cpu/simd/gemm_rows.inl"
#include "tinynet/backend/cpu/simd/gemm_nt.inl"
#include "tinynet/backend/cpu/simd/bf16_operands.inl"
#include "tinynet/backend/cpu/simd/amx_tiles.inl"
#include "tinynet/backend/cpu/simd/amx_products.inl"
#include "tinynet/backend/cpu/simd/amx_conv3x3.inl"
#include "tinynet/backend/cpu/simd/bf16_products.inl"
#include "tinynet/backend/cpu/simd/philox.inl"
#include "tinynet/backend/cpu/simd/winograd_planes.inl"
#include "tinynet/backend/cpu/simd/winograd.inl"
#include "tinynet/backend/cpu/simd/conv2d_one_channel.inl"
#include "tinynet/backend/cpu/simd/conv2d_columns.inl"
#include "tinynet/backend/cpu/simd/conv2d_shifted_rows.inl"
#include "tinynet/backend/cpu/simd/conv2d.inl"
#include "tinynet/backend/cpu/simd/conv2d_backward.inl"
#include "tinynet/backend/cpu/simd/pool2d.inl"
#include "tinynet/backend/cpu/simd/batch_norm.inl"
#include "tinynet/backend/cpu/simd/dropout.inl"
#include "tinynet/backend/cpu/simd/optimizers.inl"
#include "tinynet/backend/cpu/simd/linear.inl"
// clang-format on
