#pragma once
/// \file
/// The Tensor class, for the layers that implement it. Its members that record on the
/// autograd tape are declared here and defined by the layers that own the tape:
/// `backward` in autograd/engine.hpp, `view`/`reshape`/`flatten` in ops/view.hpp. Those
/// layers include this header; everyone else includes tinynet/core/tensor.hpp, which
/// brings the definitions too.

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tinynet/core/detail/convert.hpp"
#include "tinynet/core/device.hpp"
#include "tinynet/core/dtype.hpp"
#include "tinynet/core/error.hpp"
#include "tinynet/core/parallel.hpp"
#include "tinynet/core/shape.hpp"
#include "tinynet/core/storage.hpp"

namespace tinynet {

namespace autograd {
class Node;
}

class Tensor;

/// dtype, device and requires_grad for creation functions:
/// `zeros({2, 3}, {.dtype = DType::float64, .requires_grad = true})`.
struct TensorOptions {
  DType dtype = DType::float32;
  Device device = Device::cpu();
  bool requires_grad = false;
};

namespace detail {

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  std::int64_t offset = 0;  // in elements
  Shape shape;
  DType dtype = DType::float32;

  // Autograd bookkeeping (see autograd/).
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;
  std::shared_ptr<autograd::Node> grad_fn;
  std::vector<std::function<void(Tensor&)>> post_accumulate_hooks;
};

}  // namespace detail

class Tensor {
 public:
  /// An undefined tensor (no storage); `defined()` is false.
  Tensor() = default;

  /// Uninitialised tensor of `shape`. Prefer the creation functions in core/creation.hpp.
  Tensor(const Shape& shape, TensorOptions opts) : impl_(std::make_shared<detail::TensorImpl>()) {
    const auto n = static_cast<std::size_t>(shape.numel());
    impl_->storage = std::make_shared<detail::Storage>(n * element_size(opts.dtype), opts.device);
    impl_->shape = shape;
    impl_->dtype = opts.dtype;
    impl_->requires_grad = opts.requires_grad;
    if (opts.requires_grad)
      TINYNET_CHECK(TypeError, is_floating(opts.dtype), "only float32 and float64 tensors can require grad, got ",
                    opts.dtype, detail::compute_dtype_hint(opts.dtype));
  }

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl().shape; }
  int dim() const { return shape().rank(); }
  std::int64_t size(int d) const { return shape().size(d); }
  std::int64_t numel() const { return shape().numel(); }
  DType dtype() const { return impl().dtype; }
  Device device() const { return impl().storage->device(); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * element_size(dtype()); }
  TensorOptions options() const { return {dtype(), device(), false}; }

  /// Typed pointer to the first element; throws TypeError if T is not the dtype.
  template <typename T>
  T* data() const {
    TINYNET_CHECK(TypeError, dtype_of<T>() == dtype(), "data<", dtype_name(dtype_of<T>()), ">() called on a ", dtype(),
                  " tensor");
    return static_cast<T*>(raw_data());
  }
  void* raw_data() const {
    return static_cast<char*>(impl().storage->data()) +
           impl().offset * static_cast<std::int64_t>(element_size(dtype()));
  }

  /// The single value of a one-element tensor, converted to T (copied from the device if needed).
  /// (Defined in the class: nvcc rejects the default argument on a separate definition.)
  template <typename T = double>
  T item() const {
    TINYNET_CHECK(ShapeError, numel() == 1, "item(): expected a tensor with one element, got shape ", shape());
    const Tensor host = device().is_cpu() ? *this : to(Device::cpu());
    return dispatch_all(dtype(), [&]<typename S>() { return static_cast<T>(*host.data<S>()); });
  }

  /// Element at a multi-index, with bounds checks (CPU tensors; for tests and debugging).
  template <typename T>
  T& at(std::initializer_list<std::int64_t> index) const {
    TINYNET_CHECK(IndexError, device().is_cpu(), "at(): tensor is on ", device(), "; call .to(Device::cpu()) first");
    TINYNET_CHECK(IndexError, static_cast<int>(index.size()) == dim(), "at(): ", index.size(),
                  " indices given for a tensor of shape ", shape());
    std::int64_t flat = 0;
    int d = 0;
    for (std::int64_t i : index) {
      TINYNET_CHECK(IndexError, i >= 0 && i < shape()[d], "at(): index ", i, " out of range for dim ", d, " of shape ",
                    shape());
      flat = flat * shape()[d] + i;
      ++d;
    }
    return data<T>()[flat];
  }

  // ---- autograd -----------------------------------------------------------------
  bool requires_grad() const { return impl().requires_grad; }
  /// Marks a leaf tensor as a parameter whose gradient backward() accumulates.
  Tensor& requires_grad_(bool on = true) {
    TINYNET_CHECK(TypeError, !on || is_floating(dtype()), "only float32 and float64 tensors can require grad, got ",
                  dtype(), detail::compute_dtype_hint(dtype()));
    TINYNET_CHECK(Error, is_leaf(), "requires_grad_() on a non-leaf tensor; call detach() first");
    impl().requires_grad = on;
    return *this;
  }
  /// The accumulated gradient (undefined until a backward pass reaches this tensor).
  Tensor grad() const { return Tensor(impl().grad); }
  void set_grad(const Tensor& g) { impl().grad = g.impl_; }
  /// The node that produced this tensor, or null for a leaf.
  const std::shared_ptr<autograd::Node>& grad_fn() const { return impl().grad_fn; }
  bool is_leaf() const { return impl().grad_fn == nullptr; }
  /// Runs the tape backwards from this tensor. `grad` seeds it; may be omitted only for
  /// a one-element tensor. Defined in autograd/engine.hpp.
  void backward(const Tensor& grad = Tensor()) const;
  /// Calls `hook(param)` once this leaf's gradient is complete in a backward pass.
  void register_post_accumulate_grad_hook(std::function<void(Tensor&)> hook) {
    TINYNET_CHECK(Error, is_leaf() && requires_grad(), "post-accumulate hooks need a leaf tensor that requires grad");
    impl().post_accumulate_hooks.push_back(std::move(hook));
  }
  /// Same data, cut from the tape.
  Tensor detach() const {
    auto p = std::make_shared<detail::TensorImpl>();
    p->storage = impl().storage;
    p->offset = impl().offset;
    p->shape = impl().shape;
    p->dtype = impl().dtype;
    return Tensor(std::move(p));
  }

  // ---- shape (defined in ops/view.hpp; they record on the tape) ---------------------
  /// Same storage seen with `shape`; one extent may be -1 (inferred).
  TINYNET_OP_ABI Tensor view(std::initializer_list<std::int64_t> shape) const;
  TINYNET_OP_ABI Tensor view(const Shape& shape) const;
  Tensor reshape(std::initializer_list<std::int64_t> shape) const { return view(shape); }
  Tensor reshape(const Shape& shape) const { return view(shape); }
  /// Merges dims [start_dim, end_dim] into one.
  TINYNET_OP_ABI Tensor flatten(int start_dim = 0, int end_dim = -1) const;
  /// A dim of extent 1 inserted at `dim` (in [-dim()-1, dim()]); shares storage.
  TINYNET_OP_ABI Tensor unsqueeze(int dim) const;
  /// Without dim `dim` when its extent is 1 (else the same shape); shares storage.
  TINYNET_OP_ABI Tensor squeeze(int dim) const;
  /// Without every dim of extent 1; shares storage.
  TINYNET_OP_ABI Tensor squeeze() const;
  /// tinynet tensors are always contiguous: this tensor itself.
  Tensor contiguous() const { return *this; }
  bool is_contiguous() const { return true; }

  // ---- the views that copy (defined in ops/view.hpp; recorded on the tape) -----------
  // tinynet tensors are contiguous, so these return new contiguous tensors rather than
  // views sharing storage as PyTorch's do: writing into the result leaves this tensor as it is.
  /// Elements [start, start + length) along `dim`; a negative start counts from the end.
  TINYNET_OP_ABI Tensor narrow(int dim, std::int64_t start, std::int64_t length) const;
  /// Element `index` along `dim` (negative counts from the end), that dim removed.
  TINYNET_OP_ABI Tensor select(int dim, std::int64_t index) const;
  /// The dims reordered: dim i of the result is dim dims[i] of this tensor.
  TINYNET_OP_ABI Tensor permute(std::initializer_list<std::int64_t> dims) const;
  TINYNET_OP_ABI Tensor permute(std::span<const std::int64_t> dims) const;
  /// Dims dim0 and dim1 swapped.
  TINYNET_OP_ABI Tensor transpose(int dim0, int dim1) const;

  // ---- copies -------------------------------------------------------------------
  /// A deep copy on `device` (a new leaf, not on the tape).
  Tensor to(Device device) const;
  /// A deep copy converted to `dtype` (a new leaf, not on the tape).
  Tensor to(DType dtype) const;
  /// A deep copy on the same device (a new leaf, not on the tape).
  Tensor clone() const { return to(device()); }
  /// A copy in pinned (page-locked) host memory, from which copies to the GPU do not
  /// block the host (PyTorch's pin_memory); needs the CUDA backend and a GPU.
  Tensor pin_memory() const;
  /// True when this CPU tensor lives in pinned memory.
  bool is_pinned() const {
#if defined(TINYNET_WITH_CUDA)
    return &impl().storage->allocator() == &pinned_allocator();
#else
    return false;
#endif
  }
  /// Copies `src`'s values into this tensor (same numel, any device); not recorded.
  Tensor& copy_(const Tensor& src);
  /// Sets every element to `value`; not recorded.
  Tensor& fill_(double value);
  /// Adds `value` to every element, on the tensor's device; not recorded, so refused for a
  /// tensor that requires grad (for buffers such as a step counter).
  Tensor& add_(double value);
  Tensor& zero_() { return fill_(0.0); }

  /// True when both handles refer to the same tensor.
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }
  /// True when both share a storage block.
  bool shares_storage(const Tensor& other) const { return impl().storage == other.impl().storage; }

  std::string str() const;

  /// For the autograd layer and kernels.
  detail::TensorImpl& impl() const {
    TINYNET_CHECK(Error, impl_ != nullptr, "operation on an undefined tensor");
    return *impl_;
  }
  const std::shared_ptr<detail::TensorImpl>& impl_ptr() const { return impl_; }
  explicit Tensor(std::shared_ptr<detail::TensorImpl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<detail::TensorImpl> impl_;
};

/// A tensor sharing `base`'s storage with a new shape of the same numel (no tape).
inline Tensor alias_with_shape(const Tensor& base, const Shape& shape) {
  TINYNET_CHECK(ShapeError, shape.numel() == base.numel(), "cannot view a tensor of shape ", base.shape(), " (",
                base.numel(), " elements) as ", shape, " (", shape.numel(), " elements)");
  auto p = std::make_shared<detail::TensorImpl>();
  p->storage = base.impl().storage;
  p->offset = base.impl().offset;
  p->shape = shape;
  p->dtype = base.dtype();
  return Tensor(std::move(p));
}

/// Copies between devices and converts dtype; both sides contiguous, same numel.
/// Conversions between float32, float64 and bfloat16 on one CUDA device run there (autocast
/// casts activations every step); the others that involve a CUDA tensor go through the host.
/// To bfloat16 rounds to nearest, ties to even (from double and integers in one rounding);
/// from bfloat16 is exact for float32 and float64.
inline void copy_elements(const Tensor& dst, const Tensor& src) {
  TINYNET_CHECK(ShapeError, dst.numel() == src.numel(), "copy_: destination has ", dst.numel(), " elements, source ",
                src.numel(), " (shapes ", dst.shape(), " and ", src.shape(), ")");
  if (dst.device().is_cpu() && src.device().is_cpu()) {
    if (dst.dtype() == src.dtype()) {
      if (dst.raw_data() != src.raw_data()) std::memcpy(dst.raw_data(), src.raw_data(), dst.nbytes());
      return;
    }
    detail::convert_elements(dst.dtype(), dst.raw_data(), src.dtype(), src.raw_data(), dst.numel());
    return;
  }
#if defined(TINYNET_WITH_CUDA)
  if (dst.dtype() != src.dtype()) {
    const auto floating = [](DType t) { return is_floating(t) || t == DType::bfloat16; };
    if (dst.device() == src.device() && floating(dst.dtype()) && floating(src.dtype())) {
      dispatch_floating_and_bf16(dst.dtype(), "copy_", [&]<typename D>() {
        dispatch_floating_and_bf16(src.dtype(), "copy_",
                                   [&]<typename S>() { cuda::convert(dst.data<D>(), src.data<S>(), dst.numel()); });
      });
      return;
    }
    const Tensor host_src = src.device().is_cpu() ? src : src.to(Device::cpu());
    Tensor host_dst(dst.shape(), {dst.dtype(), Device::cpu(), false});
    copy_elements(host_dst, host_src);
    copy_elements(dst, host_dst);
    return;
  }
  if (dst.raw_data() == src.raw_data()) return;
  const cuda::CopyKind kind = src.device().is_cpu()   ? cuda::CopyKind::host_to_device
                              : dst.device().is_cpu() ? cuda::CopyKind::device_to_host
                                                      : cuda::CopyKind::device_to_device;
  cuda::copy(dst.raw_data(), src.raw_data(), dst.nbytes(), kind,
             kind == cuda::CopyKind::host_to_device && src.is_pinned() ? src.impl().storage : nullptr);
#else
  throw TypeError("copy between " + src.device().str() + " and " + dst.device().str() +
                  " needs the CUDA backend (compile with nvcc)");
#endif
}

inline Tensor Tensor::to(Device dev) const {
  Tensor out(shape(), {dtype(), dev, false});
  copy_elements(out, *this);
  return out;
}

inline Tensor Tensor::pin_memory() const {
  TINYNET_CHECK(TypeError, device().is_cpu(), "pin_memory(): tensor is on ", device(),
                "; only CPU tensors can be pinned");
#if defined(TINYNET_WITH_CUDA)
  TINYNET_CHECK(Error, cuda::is_available(), "pin_memory(): no CUDA device is present to pin memory for");
  if (is_pinned()) return *this;
  auto p = std::make_shared<detail::TensorImpl>();
  p->storage = std::make_shared<detail::Storage>(nbytes(), Device::cpu(), pinned_allocator());
  p->shape = shape();
  p->dtype = dtype();
  Tensor out(std::move(p));
  if (nbytes() != 0) std::memcpy(out.raw_data(), raw_data(), nbytes());
  return out;
#else
  throw TypeError("pin_memory(): this translation unit was compiled without CUDA (compile it with nvcc)");
#endif
}

inline Tensor Tensor::to(DType t) const {
  Tensor out(shape(), {t, device(), false});
  copy_elements(out, *this);
  return out;
}

inline Tensor& Tensor::copy_(const Tensor& src) {
  copy_elements(*this, src);
  return *this;
}

inline Tensor& Tensor::fill_(double value) {
#if defined(TINYNET_WITH_CUDA)
  if (device().is_cuda()) {
    dispatch_all(dtype(), [&]<typename T>() { cuda::fill(data<T>(), numel(), static_cast<T>(value)); });
    return *this;
  }
#endif
  dispatch_all(dtype(), [&]<typename T>() {
    T* p = data<T>();
    const T v = static_cast<T>(value);
    for (std::int64_t i = 0, n = numel(); i < n; ++i) p[i] = v;
  });
  return *this;
}

inline Tensor& Tensor::add_(double value) {
  TINYNET_CHECK(Error, !requires_grad(), "add_(): in place on a tensor that requires grad (not recorded)");
#if defined(TINYNET_WITH_CUDA)
  if (device().is_cuda()) {
    dispatch_arithmetic(dtype(), "add_",
                        [&]<typename T>() { cuda::add_scalar(data<T>(), numel(), static_cast<T>(value)); });
    return *this;
  }
#endif
  dispatch_arithmetic(dtype(), "add_", [&]<typename T>() {
    T* p = data<T>();
    const T v = static_cast<T>(value);
    for (std::int64_t i = 0, n = numel(); i < n; ++i) p[i] = static_cast<T>(p[i] + v);
  });
  return *this;
}

inline std::string Tensor::str() const {
  if (!defined()) return "Tensor(undefined)";
  std::ostringstream os;
  os << "Tensor(shape=" << shape() << ", dtype=" << dtype() << ", device=" << device();
  if (device().is_cpu() && numel() <= 16) {
    os << ", values=[";
    dispatch_all(dtype(), [&]<typename T>() {
      for (std::int64_t i = 0; i < numel(); ++i) {
        os << (i ? ", " : "");
        if constexpr (std::is_same_v<T, bfloat16>)
          os << static_cast<float>(data<T>()[i]);
        else if constexpr (std::is_same_v<T, bool>)
          os << (data<T>()[i] ? "true" : "false");
        else
          os << +data<T>()[i];
      }
    });
    os << "]";
  }
  if (requires_grad()) os << ", requires_grad";
  return os.str() + ")";
}

inline std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace tinynet
