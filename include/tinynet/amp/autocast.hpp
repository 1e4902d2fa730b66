#pragma once
/// \file
/// autocast: mixed precision for a scope, like `torch.autocast(device_type, dtype)`.
///
///     {
///       tinynet::autocast guard(DeviceType::cpu, DType::bfloat16);
///       Tensor loss = nll_loss(log_softmax(model.forward(x), 1), y);
///     }
///     loss.backward();  // the recorded products run in bfloat16 again
///
/// Inside it, on that device type, conv2d, conv2d_relu, linear and matmul of float32
/// tensors multiply bfloat16-rounded operands and sum in float32 (backend/products.hpp),
/// in the forward pass and, recorded on the tape, in the backward pass. Parameters stay
/// float32 (the master copy) and get float32 gradients. conv2d and conv2d_relu return
/// bfloat16, as PyTorch's do, and the ops after them take bfloat16 activations (linear,
/// pooling, dropout and the elementwise ops in their kernels, where the backend has such
/// kernels: backend/bf16_activations.hpp; the others through float32). softmax,
/// log_softmax, the losses, reductions and batch norm run in float32 and return float32
/// (PyTorch's CPU autocast returns float32 from the losses only, bfloat16 from the others
/// for a bfloat16 input). float64 tensors are left alone. docs/autocast.md lists the ops
/// and the differences. Scopes nest; each restores what it found.
///
/// On the CPU the products run on AMX tiles or AVX512-BF16 (`vdpbf16ps`) at the levels
/// that have them; at the others (a CPU without AVX512-BF16, a capped level, or Intel's
/// cores, whose `vdpbf16ps` is no faster than their FMAs: backend/cpu/isa.hpp) the operands
/// are rounded in the float32 kernels (the same products, in another order), said once on
/// stderr with the reason.

#include <cstdio>
#include <string>

#include "tinynet/backend/bf16_products.hpp"
#include "tinynet/backend/products.hpp"
#include "tinynet/core/device.hpp"
#include "tinynet/core/dtype.hpp"
#include "tinynet/core/error.hpp"

namespace tinynet {

namespace detail {

/// Per thread, per device type: whether autocast is on (as PyTorch's state is per thread).
inline bool& autocast_flag(DeviceType device) {
  thread_local bool on[2] = {false, false};
  return on[device == DeviceType::cuda ? 1 : 0];
}

/// The CPU backend's one-line notice where it rounds the products in its float32 kernels,
/// once per process.
inline void notice_emulated_bf16() {
  static const bool said = [] {
    const std::string line = backend::bf16_products_notice(DeviceType::cpu);
    return !line.empty() && std::fprintf(stderr, "%s\n", line.c_str()) > 0;
  }();
  (void)said;
}

}  // namespace detail

/// Whether autocast is on for `device` in this thread.
inline bool is_autocast_enabled(DeviceType device = DeviceType::cpu) { return detail::autocast_flag(device); }

/// How conv2d, linear and matmul multiply tensors of `dtype` on `device` here and now.
inline backend::Products autocast_products(Device device, DType dtype) {
  return dtype == DType::float32 && is_autocast_enabled(device.type) ? backend::Products::bfloat16
                                                                     : backend::Products::as_input;
}

/// Turns autocast on (or off, with enabled = false) for `device` in this thread until the
/// end of the scope. bfloat16 is the one lower-precision type.
class autocast {
 public:
  explicit autocast(DeviceType device = DeviceType::cpu, DType dtype = DType::bfloat16, bool enabled = true)
      : device_(device), prev_(detail::autocast_flag(device)) {
    TINYNET_CHECK(TypeError, dtype == DType::bfloat16, "autocast: dtype must be bfloat16, got ", dtype,
                  " (float16 autocast is not implemented)");
    if (enabled && device == DeviceType::cpu) detail::notice_emulated_bf16();
    detail::autocast_flag(device) = enabled;
  }
  ~autocast() { detail::autocast_flag(device_) = prev_; }
  autocast(const autocast&) = delete;
  autocast& operator=(const autocast&) = delete;

 private:
  DeviceType device_;
  bool prev_;
};

}  // namespace tinynet
