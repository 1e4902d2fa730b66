#pragma once
/// \file
/// The CPU kernels whose speed depends on the vector instruction level, compiled once per
/// level from one source (simd/kernels.inl), whatever flags the including program uses:
/// `cpu::baseline` with the program's own flags, and on x86-64 `cpu::avx2` (AVX2 + FMA),
/// `cpu::avx512` (AVX-512 F/VL/BW/DQ), `cpu::avx512_bf16` (AVX-512 and AVX512-BF16) and
/// `cpu::amx` (those and AMX-TILE, AMX-BF16) under GCC's and Clang's target pragmas (simd/level.inl), the way Google
/// Highway compiles one source for several targets. Inside a level, `TINYNET_ISA_LEVEL` says which one is being
/// compiled, so a kernel keeps its vector and portable paths side by side with `#if`, and its `Level` tag holds what it
/// can do as constants (`Level::native_bf16`, ...).
///
/// The family headers (backend/cpu/conv2d.hpp, ...) call `on_isa(f)`, which calls `f`
/// with the `Level` tag of the level chosen at run time (backend/cpu/isa.hpp); the kernels
/// of each level take that tag first and are found by argument-dependent lookup, as the
/// backends' kernels are found by their `Tag`.
///
/// A CUDA translation unit linking tinynet::cpu_kernels declares the levels above the
/// baseline (their tags and simd/entry_points.inl) and calls the library's kernels: nvcc
/// cannot compile their sources (core/config.hpp).
///
/// Everything the kernel sources use from outside is included here first: a header first
/// included inside a level's namespace would land in it.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(TINYNET_CPU_X86) && !defined(TINYNET_CPU_LEVELS_DECLARED_ONLY)
#include <immintrin.h>
#endif

#include "tinynet/backend/backend.hpp"
#include "tinynet/backend/batch_norm.hpp"
#include "tinynet/backend/conv2d.hpp"
#include "tinynet/backend/cpu/detail/conv2d_plan.hpp"
#include "tinynet/backend/cpu/detail/gemm.hpp"
#include "tinynet/backend/cpu/detail/scratch.hpp"
#include "tinynet/backend/cpu/elementwise.hpp"
#include "tinynet/backend/cpu/isa.hpp"
#include "tinynet/backend/optimizers.hpp"
#include "tinynet/backend/pool2d.hpp"
#include "tinynet/backend/products.hpp"
#include "tinynet/core/bfloat16.hpp"
#include "tinynet/core/config.hpp"
#include "tinynet/core/detail/convert.hpp"
#include "tinynet/core/parallel.hpp"
#include "tinynet/core/random.hpp"

#define TINYNET_ISA_LEVEL TINYNET_ISA_BASELINE
#define TINYNET_ISA_NS baseline
#include "tinynet/backend/cpu/simd/level.inl"
#undef TINYNET_ISA_NS
#undef TINYNET_ISA_LEVEL

#if defined(TINYNET_CPU_X86)
// Each level's target, written once; each adds to the one below it.
#define TINYNET_ISA_LEVEL TINYNET_ISA_AVX2
#define TINYNET_ISA_NS avx2
#define TINYNET_ISA_TARGET "avx2,fma,bmi,bmi2,f16c,lzcnt,popcnt"
#include "tinynet/backend/cpu/simd/level.inl"
#undef TINYNET_ISA_TARGET
#undef TINYNET_ISA_NS
#undef TINYNET_ISA_LEVEL

#define TINYNET_ISA_LEVEL TINYNET_ISA_AVX512
#define TINYNET_ISA_NS avx512
#define TINYNET_ISA_TARGET "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma,bmi,bmi2,f16c,lzcnt,popcnt"
#include "tinynet/backend/cpu/simd/level.inl"
#undef TINYNET_ISA_TARGET
#undef TINYNET_ISA_NS
#undef TINYNET_ISA_LEVEL

#define TINYNET_ISA_LEVEL TINYNET_ISA_AVX512_BF16
#define TINYNET_ISA_NS avx512_bf16
#define TINYNET_ISA_TARGET "avx512bf16,avx512f,avx512vl,avx512bw,avx512dq,avx2,fma,bmi,bmi2,f16c,lzcnt,popcnt"
#include "tinynet/backend/cpu/simd/level.inl"
#undef TINYNET_ISA_TARGET
#undef TINYNET_ISA_NS
#undef TINYNET_ISA_LEVEL

#define TINYNET_ISA_LEVEL TINYNET_ISA_AMX
#define TINYNET_ISA_NS amx
#define TINYNET_ISA_TARGET \
  "amx-tile,amx-bf16,avx512bf16,avx512f,avx512vl,avx512bw,avx512dq,avx2,fma,bmi,bmi2,f16c,lzcnt,popcnt"
#include "tinynet/backend/cpu/simd/level.inl"
#undef TINYNET_ISA_TARGET
#undef TINYNET_ISA_NS
#undef TINYNET_ISA_LEVEL
#endif  // TINYNET_CPU_X86

// Each level's kernel entry points, for compiling them once in a library instead of in
// every translation unit that trains a network (most of such a unit's compile time is
// the levels): TINYNET_CPU_KERNELS(template, avx512) instantiates a level's,
// TINYNET_CPU_KERNELS(extern template, avx512) declares them compiled elsewhere. The
// tinynet::cpu_kernels target (CMakeLists.txt, src/cpu_kernels/) does both; the tests
// check that its list matches the entry points, since a kernel left off it is merely
// compiled in each unit again.
#define TINYNET_CPU_KERNELS_OF_TYPE(KEYWORDS, LEVEL, T)                                                                \
  KEYWORDS bool cpu::LEVEL::uses_winograd<T>(cpu::LEVEL::Level, const Conv2dGeometry&);                                \
  KEYWORDS bool cpu::LEVEL::uses_one_channel<T>(cpu::LEVEL::Level, const Conv2dGeometry&);                             \
  KEYWORDS bool cpu::LEVEL::conv2d_takes_bf16<T>(cpu::LEVEL::Level, const Conv2dGeometry&, bool);                      \
  KEYWORDS void cpu::LEVEL::conv2d_forward<T>(cpu::LEVEL::Level, const Conv2dGeometry&, const T*, const T*, const T*,  \
                                              T*, T*, bool, Products);                                                 \
  KEYWORDS void cpu::LEVEL::conv2d_backward<T>(cpu::LEVEL::Level, const Conv2dGeometry&, const T*, const T*, const T*, \
                                               T*, bool, T*, bool, T*, bool, T*, const T*, Products);                  \
  KEYWORDS void cpu::LEVEL::dropout_mask<T>(cpu::LEVEL::Level, const RandomStream&, T*, std::int64_t, double);         \
  KEYWORDS void cpu::LEVEL::linear_forward<T>(cpu::LEVEL::Level, const T*, const T*, const T*, T*, std::int64_t,       \
                                              std::int64_t, std::int64_t, Products);                                   \
  KEYWORDS void cpu::LEVEL::linear_backward_input<T>(cpu::LEVEL::Level, const T*, const T*, T*, std::int64_t,          \
                                                     std::int64_t, std::int64_t, bool, Products);                      \
  KEYWORDS void cpu::LEVEL::linear_backward_weight<T>(cpu::LEVEL::Level, const T*, const T*, T*, std::int64_t,         \
                                                      std::int64_t, std::int64_t, bool, Products);                     \
  KEYWORDS void cpu::LEVEL::sgd_update<T>(cpu::LEVEL::Level, T*, const T*, T*, std::int64_t, const SgdArgs&);          \
  KEYWORDS void cpu::LEVEL::adadelta_update<T>(cpu::LEVEL::Level, T*, const T*, T*, T*, std::int64_t,                  \
                                               const AdadeltaArgs&);                                                   \
  KEYWORDS void cpu::LEVEL::max_pool2d_forward<T>(cpu::LEVEL::Level, const Pool2dGeometry&, const T*, T*,              \
                                                  std::int32_t*);                                                      \
  TINYNET_CPU_KERNELS_OF_BATCH_NORM(KEYWORDS, LEVEL, T, T)
// batch_norm with input X (and its gradient), everything else T.
#define TINYNET_CPU_KERNELS_OF_BATCH_NORM(KEYWORDS, LEVEL, X, T)                                                       \
  KEYWORDS void cpu::LEVEL::batch_norm_train_stats<X, T>(cpu::LEVEL::Level, const BatchNormGeometry&, const X*, T*,    \
                                                         T*, T*, T*, T*, double, double);                              \
  KEYWORDS void cpu::LEVEL::batch_norm_apply<X, T>(cpu::LEVEL::Level, const BatchNormGeometry&, const X*, const T*,    \
                                                   const T*, const T*, const T*, T*, bool);                            \
  KEYWORDS void cpu::LEVEL::batch_norm_backward<X, T>(cpu::LEVEL::Level, const BatchNormGeometry&, const X*, const T*, \
                                                      const T*, const T*, const T*, const T*, bool, X*, bool, T*,      \
                                                      bool, T*, bool, double*);
// The kernels that also take bfloat16 activations.
#define TINYNET_CPU_KERNELS_OF_BF16(KEYWORDS, LEVEL)                                                                \
  KEYWORDS void cpu::LEVEL::max_pool2d_forward<bfloat16>(cpu::LEVEL::Level, const Pool2dGeometry&, const bfloat16*, \
                                                         bfloat16*, std::int32_t*);
// conv2d with bfloat16 activations (input X, output Y, the output gradient in bfloat16 too).
#define TINYNET_CPU_KERNELS_OF_CONV2D_BF16(KEYWORDS, LEVEL, X)                                                         \
  KEYWORDS void cpu::LEVEL::conv2d_forward<float, X, bfloat16>(cpu::LEVEL::Level, const Conv2dGeometry&, const X*,     \
                                                               const float*, const float*, bfloat16*, float*, bool,    \
                                                               Products);                                              \
  KEYWORDS void cpu::LEVEL::conv2d_backward<float, X, bfloat16>(cpu::LEVEL::Level, const Conv2dGeometry&, const X*,    \
                                                                const float*, const bfloat16*, X*, bool, float*, bool, \
                                                                float*, bool, float*, const bfloat16*, Products);
// From avx512 up: conv2d's bfloat16 input and dropout's bfloat16 kernel.
#define TINYNET_CPU_KERNELS_AVX512(KEYWORDS, LEVEL)                                                           \
  namespace tinynet::backend {                                                                                \
  TINYNET_CPU_KERNELS_OF_CONV2D_BF16(KEYWORDS, LEVEL, bfloat16)                                               \
  KEYWORDS void cpu::LEVEL::apply_mask<bfloat16>(cpu::LEVEL::Level, const bfloat16*, const float*, bfloat16*, \
                                                 std::int64_t, bool);                                         \
  }
// linear with bfloat16 activations, from the avx2 level up.
#define TINYNET_CPU_KERNELS_LINEAR_BF16(KEYWORDS, LEVEL)                                                               \
  namespace tinynet::backend {                                                                                         \
  KEYWORDS void cpu::LEVEL::linear_forward<float>(cpu::LEVEL::Level, const bfloat16*, const float*, const float*,      \
                                                  bfloat16*, std::int64_t, std::int64_t, std::int64_t);                \
  KEYWORDS void cpu::LEVEL::linear_backward_input<float>(cpu::LEVEL::Level, const bfloat16*, const float*, bfloat16*,  \
                                                         std::int64_t, std::int64_t, std::int64_t, bool);              \
  KEYWORDS void cpu::LEVEL::linear_backward_weight<float>(cpu::LEVEL::Level, const bfloat16*, const bfloat16*, float*, \
                                                          std::int64_t, std::int64_t, std::int64_t, bool);             \
  }
// Every level: both float types, and the bfloat16 activations every level takes (conv2d's
// bfloat16 output for a float32 input and batch_norm's bfloat16 input among them).
#define TINYNET_CPU_KERNELS(KEYWORDS, LEVEL)                          \
  namespace tinynet::backend {                                        \
  TINYNET_CPU_KERNELS_OF_TYPE(KEYWORDS, LEVEL, float)                 \
  TINYNET_CPU_KERNELS_OF_TYPE(KEYWORDS, LEVEL, double)                \
  TINYNET_CPU_KERNELS_OF_BF16(KEYWORDS, LEVEL)                        \
  TINYNET_CPU_KERNELS_OF_CONV2D_BF16(KEYWORDS, LEVEL, float)          \
  TINYNET_CPU_KERNELS_OF_BATCH_NORM(KEYWORDS, LEVEL, bfloat16, float) \
  }

#if defined(TINYNET_CPU_KERNELS_COMPILED)  // linked from tinynet::cpu_kernels
TINYNET_CPU_KERNELS(extern template, baseline)
#if defined(TINYNET_CPU_X86)
TINYNET_CPU_KERNELS(extern template, avx2)
TINYNET_CPU_KERNELS_LINEAR_BF16(extern template, avx2)
TINYNET_CPU_KERNELS(extern template, avx512)
TINYNET_CPU_KERNELS_AVX512(extern template, avx512)
TINYNET_CPU_KERNELS_LINEAR_BF16(extern template, avx512)
TINYNET_CPU_KERNELS(extern template, avx512_bf16)
TINYNET_CPU_KERNELS_AVX512(extern template, avx512_bf16)
TINYNET_CPU_KERNELS_LINEAR_BF16(extern template, avx512_bf16)
TINYNET_CPU_KERNELS(extern template, amx)
TINYNET_CPU_KERNELS_AVX512(extern template, amx)
TINYNET_CPU_KERNELS_LINEAR_BF16(extern template, amx)
#endif
#endif

namespace tinynet::backend::cpu {

/// Calls f(level) with the Level tag of the vector level in use (isa()).
template <typename F>
decltype(auto) on_isa(F&& f) {
#if defined(TINYNET_CPU_X86)
  switch (isa()) {
    case Isa::amx:
      return f(amx::Level{});
    case Isa::avx512_bf16:
      return f(avx512_bf16::Level{});
    case Isa::avx512:
      return f(avx512::Level{});
    case Isa::avx2:
      return f(avx2::Level{});
    default:
      break;
  }
#endif
  return f(baseline::Level{});
}

/// Calls f(level) at the level in use where `has(level)` holds: a capability of its Level
/// tag, such as `Level::conv2d_bf16`, read by a lambda without captures. Elsewhere throws
/// an Error that starts with `what`. A family header's supports_bf16 asks the same
/// capability first, so the throw marks a caller that skipped it.
template <typename Has, typename F>
void on_isa_having(Has, const char* what, F&& f) {
  on_isa([&](auto level) {
    if constexpr (Has{}(decltype(level){}))
      f(level);
    else
      throw Error(std::string(what) + " at a CPU level without their kernels (supports_bf16 says where)");
  });
}

}  // namespace tinynet::backend::cpu
