#pragma once
/// \file
/// Build configuration seen by every header.
///
/// `TINYNET_WITH_CUDA` is defined when tensors may live on a CUDA device:
/// - the translation unit is compiled by nvcc (`__CUDACC__`): real GPU, cuBLAS, CUDA streams;
/// - or `TINYNET_EMULATE_CUDA` is defined and Thrust's device system is TBB or OpenMP: the
///   "emulated device", where the same device code runs on the CPU (see docs/gpu.md). It
///   exists so that CI machines without a GPU test the GPU code path.
/// `TINYNET_HOST_DEVICE` marks functions that kernels call on the device.

#if defined(__CUDACC__)
#define TINYNET_HOST_DEVICE __host__ __device__
#ifndef TINYNET_WITH_CUDA
#define TINYNET_WITH_CUDA 1
#endif
#else
#define TINYNET_HOST_DEVICE
#if defined(TINYNET_EMULATE_CUDA)
#if !defined(THRUST_DEVICE_SYSTEM)
#error \
    "TINYNET_EMULATE_CUDA needs THRUST_DEVICE_SYSTEM=THRUST_DEVICE_SYSTEM_TBB (or _OMP) to run device code on the CPU"
#endif
#ifndef TINYNET_WITH_CUDA
#define TINYNET_WITH_CUDA 1
#endif
#endif
#endif

/// `TINYNET_INDEPENDENT_ITERATIONS` before a loop: its iterations may run in any order. For
/// elementwise kernels whose output may be one of their inputs (the same buffer, never one
/// offset from it), which the compiler cannot prove and so would not vectorize.
#if defined(__CUDACC__)
#define TINYNET_INDEPENDENT_ITERATIONS
#elif defined(__clang__)
#define TINYNET_INDEPENDENT_ITERATIONS _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define TINYNET_INDEPENDENT_ITERATIONS _Pragma("GCC ivdep")
#else
#define TINYNET_INDEPENDENT_ITERATIONS
#endif

#if defined(TINYNET_WITH_CUDA) && !defined(__CUDACC__) && !defined(TINYNET_EMULATE_CUDA)
#error \
    "TINYNET_WITH_CUDA is set by tinynet itself: compile with nvcc, or define TINYNET_EMULATE_CUDA for the emulated device"
#endif

/// `TINYNET_CPU_X86`: the CPU kernels exist for each x86-64 vector level (baseline, AVX2 +
/// FMA, AVX-512, ...), compiled with GCC's and Clang's target pragmas whatever the compiler
/// flags, and the level the CPU has is chosen at run time (backend/cpu/isa.hpp). nvcc's
/// front end does not take their vector types, so a CUDA translation unit declares the
/// levels above the baseline only (`TINYNET_CPU_LEVELS_DECLARED_ONLY`) and takes their
/// kernels from tinynet::cpu_kernels, which defines `TINYNET_CPU_LEVELS_LINKED` for the CUDA
/// sources linking it; a CUDA unit without the library runs the portable loops.
/// `TINYNET_VECTOR_INLINE` marks the shared rules that the per-level CPU kernels apply to
/// vector values (backend/optimizers.hpp): always inlined, so that they compile at the
/// caller's level; a call would pass the vectors from code built for the baseline level,
/// under another calling convention.
#if defined(__GNUC__) && !defined(__CUDACC__)
#define TINYNET_VECTOR_INLINE [[gnu::always_inline]] inline
#else
#define TINYNET_VECTOR_INLINE inline
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    (!defined(__CUDACC__) || defined(TINYNET_CPU_LEVELS_LINKED))
#define TINYNET_CPU_X86 1
#if defined(__CUDACC__)
#define TINYNET_CPU_LEVELS_DECLARED_ONLY 1
#endif
#endif

/// `TINYNET_COMPILED_ONCE` before a non-template function defined in a header whose code is
/// large and the same in every program (dtype conversions): with tinynet::cpu_kernels linked
/// (`TINYNET_CPU_KERNELS_COMPILED`), a program's files see its declaration only and the
/// library's source (`TINYNET_CPU_KERNELS_SOURCE`) compiles it once; otherwise it is inline.
#if defined(TINYNET_CPU_KERNELS_SOURCE)
#define TINYNET_COMPILED_ONCE
#else
#define TINYNET_COMPILED_ONCE inline
#endif
#if defined(TINYNET_CPU_KERNELS_COMPILED) && !defined(TINYNET_CPU_KERNELS_SOURCE)
#define TINYNET_COMPILED_ONCE_DECLARED_ONLY 1
#endif

/// `TINYNET_OP` before each declaration and definition of an op's entry point (`relu`,
/// `conv2d`; `TINYNET_OP_ABI` on the members, `Tensor::view`): with tinynet::cpu_kernels
/// linked, a program's files see the ops' declarations only (`TINYNET_OPS_DECLARED_ONLY`: no
/// op bodies, autograd nodes or backend headers to compile) and the library's source
/// (`TINYNET_OPS_SOURCE`) compiles them once; otherwise, and in every file that has the CUDA
/// backend (whose ops also dispatch to the device), they are inline. The compiled ones carry
/// an ABI tag: they never stand in for the inline ones under another build's name.
#if defined(TINYNET_OPS_SOURCE) || (defined(TINYNET_COMPILED_ONCE_DECLARED_ONLY) && !defined(TINYNET_WITH_CUDA))
#define TINYNET_OP_ABI [[gnu::abi_tag("cpu")]]
#define TINYNET_OP TINYNET_OP_ABI
#if !defined(TINYNET_OPS_SOURCE)
#define TINYNET_OPS_DECLARED_ONLY 1
#endif
#else
#define TINYNET_OP_ABI
#define TINYNET_OP inline
#endif
