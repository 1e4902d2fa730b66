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

#if defined(TINYNET_WITH_CUDA) && !defined(__CUDACC__) && !defined(TINYNET_EMULATE_CUDA)
#error \
    "TINYNET_WITH_CUDA is set by tinynet itself: compile with nvcc, or define TINYNET_EMULATE_CUDA for the emulated device"
#endif

/// `TINYNET_CPU_AVX512`: the CPU kernels' AVX-512 paths are compiled (the target has
/// AVX-512F, e.g. with -march=native on such a machine). Not under nvcc, whose front end
/// does not take vector types into host-device code: CUDA translation units run the
/// portable CPU loops.
#if defined(__AVX512F__) && !defined(__CUDACC__)
#define TINYNET_CPU_AVX512 1
#endif
