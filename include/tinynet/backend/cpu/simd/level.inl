/// \file
/// One vector level: the kernel sources (simd/kernels.inl) compiled inside the level's
/// namespace `tinynet::backend::cpu::<TINYNET_ISA_NS>` for its target
/// (`TINYNET_ISA_TARGET`, a string GCC's and Clang's target attribute take; undefined for
/// the baseline, which takes the program's own flags), with `TINYNET_ISA_LEVEL` its number
/// for `#if` in the sources. backend/cpu/kernels_for_isa.hpp defines the three and
/// includes this once per level, as Google Highway re-includes one source per target.
/// Where the level's kernels are taken from tinynet::cpu_kernels instead (nvcc's units,
/// `TINYNET_CPU_LEVELS_DECLARED_ONLY`), only its `Level` tag and the kernels' declarations
/// (simd/entry_points.inl). No include guard: that is the point.

#if !defined(TINYNET_CPU_LEVELS_DECLARED_ONLY) || TINYNET_ISA_LEVEL == TINYNET_ISA_BASELINE
#define TINYNET_ISA_SOURCES 1
#endif

// clang-format off
#if defined(TINYNET_ISA_TARGET) && defined(TINYNET_ISA_SOURCES)
#define TINYNET_ISA_PRAGMA(x) _Pragma(#x)
#if defined(__clang__)
#define TINYNET_ISA_PUSH(t) TINYNET_ISA_PRAGMA(clang attribute push(__attribute__((target(t))), apply_to = function))
TINYNET_ISA_PUSH(TINYNET_ISA_TARGET)
#else
#define TINYNET_ISA_PUSH(t) TINYNET_ISA_PRAGMA(GCC target(t))
#pragma GCC push_options
TINYNET_ISA_PUSH(TINYNET_ISA_TARGET)
#endif
#endif
// clang-format on

#define TINYNET_ISA_NAMESPACE ::tinynet::backend::cpu::TINYNET_ISA_NS
namespace tinynet::backend::cpu::TINYNET_ISA_NS {

/// Selects this level's kernels; what the level can do, as constants.
struct Level {
  static constexpr Isa isa = static_cast<Isa>(TINYNET_ISA_LEVEL);
  /// autocast's bfloat16 products on vdpbf16ps (else rounded in the float32 kernels).
  static constexpr bool native_bf16 = TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512_BF16;
  /// conv2d's kernels return bfloat16 activations (and take their gradient) for a float32
  /// input (backend/bf16_activations.hpp): at every level (the baseline's runs element by
  /// element).
  static constexpr bool conv2d_bf16 = true;
  /// conv2d's kernels take a bfloat16 input as well.
  static constexpr bool conv2d_bf16_input = TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512;
  /// linear's kernels take bfloat16 activations (in pairs as they are with vdpbf16ps, which
  /// needs an even number of input features; else widened a block at a time).
  static constexpr bool linear_bf16 = TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2;
  /// batch_norm's kernels take a bfloat16 input (read as it is, widened as loaded): at
  /// every level (the baseline's element by element).
  static constexpr bool batch_norm_bf16 = true;
};

#include "tinynet/backend/cpu/simd/entry_points.inl"
#if defined(TINYNET_ISA_SOURCES)
#include "tinynet/backend/cpu/simd/kernels.inl"
#endif

}  // namespace tinynet::backend::cpu::TINYNET_ISA_NS
#undef TINYNET_ISA_NAMESPACE

#if defined(TINYNET_ISA_TARGET) && defined(TINYNET_ISA_SOURCES)
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#undef TINYNET_ISA_PUSH
#undef TINYNET_ISA_PRAGMA
#endif
#undef TINYNET_ISA_SOURCES
