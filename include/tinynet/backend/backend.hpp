#pragma once
/// \file
/// The seam between ops and kernels: one tag type per backend, and with_backend(), which
/// picks the tag from a tensor's device.
///
/// Kernels take their backend's tag as the first argument and live in that backend's
/// namespace, so an op calls them unqualified and argument-dependent lookup finds the
/// right one (the way Thrust picks a system by its execution policy):
/// ```
///   with_backend(x.device(), "linear", [&](auto be) { linear_forward(be, x, w, b, y, ...); });
/// ```
/// `backend::cpu::Tag` always exists; `backend::cuda::Tag` only in translation units that
/// have the CUDA backend (nvcc, or the emulated device; see core/config.hpp). Both
/// backends offer the same kernels with the same signatures (backend/kernel_set.hpp); the
/// kernels over bfloat16 activations are a capability a backend may lack, which ops ask
/// about (backend/bf16_activations.hpp).

#include "tinynet/core/config.hpp"
#include "tinynet/core/device.hpp"
#include "tinynet/core/dtype.hpp"

namespace tinynet::backend {

namespace cpu {
/// Selects the CPU kernels (Eigen, oneTBB, the SIMD kernels in backend/cpu/detail).
struct Tag {};
}  // namespace cpu

#if defined(TINYNET_WITH_CUDA)
namespace cuda {
/// Selects the device kernels (Thrust, cuBLAS; on the emulated device, the same code on the CPU).
struct Tag {};
}  // namespace cuda
#endif

/// Calls `f(tag)` with the tag of `device`'s backend. A device this translation unit has no
/// kernels for is a TypeError naming `op` (core/device.hpp, require_compiled).
template <typename F>
decltype(auto) with_backend(Device device, const char* op, F&& f) {
  require_compiled(device, op);
#if defined(TINYNET_WITH_CUDA)
  if (device.is_cuda()) return f(cuda::Tag{});
#endif
  return f(cpu::Tag{});
}

/// Calls `f.template operator()<T>(tag)` with T the scalar type of `dtype` (float32 or
/// float64; TypeError naming `op` otherwise) and `tag` the backend of `device`.
template <typename F>
void dispatch(Device device, DType dtype, const char* op, F&& f) {
  with_backend(device, op,
               [&](auto be) { dispatch_floating(dtype, op, [&]<typename T>() { f.template operator()<T>(be); }); });
}

/// The dtypes a dispatch takes, each through its dispatcher in core/dtype.hpp.
enum class DTypes {
  comparable,  ///< float32, float64, int32, int64, bool (comparisons, argmax)
  integral,    ///< int32, int64, bool (sums that count)
  all,         ///< every dtype (copies: the views that gather, cat, index_select)
};

/// Like dispatch, with T any dtype of the set `Set`; TypeError naming `op` for the others.
template <DTypes Set, typename F>
void dispatch_over(Device device, DType dtype, const char* op, F&& f) {
  with_backend(device, op, [&](auto be) {
    const auto call = [&]<typename T>() { f.template operator()<T>(be); };
    if constexpr (Set == DTypes::comparable)
      dispatch_arithmetic_and_bool(dtype, op, call);
    else if constexpr (Set == DTypes::integral)
      dispatch_integral(dtype, op, call);
    else
      dispatch_all(dtype, call);
  });
}

/// Like dispatch, and T = bfloat16 for bfloat16 tensors (the ops whose kernels take
/// bfloat16 activations: core/dtype.hpp, dispatch_floating_and_bf16).
template <typename F>
void dispatch_with_bf16(Device device, DType dtype, const char* op, F&& f) {
  with_backend(device, op, [&](auto be) {
    dispatch_floating_and_bf16(dtype, op, [&]<typename T>() { f.template operator()<T>(be); });
  });
}

}  // namespace tinynet::backend
