#pragma once
/// \file
/// The CUDA runtime as tinynet uses it: devices, one stream per device, device memory,
/// copies, fills, and the device-side error flag. This file and backend/cuda/gemm.hpp are
/// the whole seam between a real GPU and the emulated device: everything else (kernels,
/// ops, optimizers) is the same code in both builds.
///
/// Real GPU (nvcc): cudaMalloc, cudaMemcpyAsync on the device's stream, Thrust on that
/// stream without synchronising (`par_nosync`). Emulated (TINYNET_EMULATE_CUDA): host
/// memory, memcpy, Thrust's TBB/OpenMP backend, one "device" cuda:0.

#include "tinynet/core/config.hpp"

#if defined(TINYNET_WITH_CUDA)

#include <thrust/execution_policy.h>
#include <thrust/fill.h>
#include <thrust/transform.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "tinynet/core/error.hpp"

#if defined(__CUDACC__)
#include <cuda_runtime.h>
#endif

namespace tinynet::cuda {

/// True when device code runs on the CPU (the emulated device of CPU-only CI).
#if defined(__CUDACC__)
inline constexpr bool kEmulated = false;
#else
inline constexpr bool kEmulated = true;
#endif

#if defined(__CUDACC__)
/// Throws tinynet::Error naming `what` and CUDA's message when `e` is not cudaSuccess.
inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(e));
}
#endif

/// Number of usable CUDA devices: 0 without a driver or a GPU (never throws).
inline int device_count() {
#if defined(__CUDACC__)
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      (void)cudaGetLastError();  // clear the sticky "no device" error
      return 0;
    }
    return n;
  }();
  return count;
#else
  return 1;
#endif
}

/// True when a CUDA device can be used (like torch.cuda.is_available()).
inline bool is_available() { return device_count() > 0; }

namespace detail {
inline int& current_index() {
  static int index = 0;
  return index;
}
}  // namespace detail

/// The device every CUDA tensor of this process lives on (torch.cuda.set_device).
inline int current_device() { return detail::current_index(); }

/// A clear error unless cuda:`index` exists and is the current device.
inline void check_device(int index) {
  const int n = device_count();
  TINYNET_CHECK(Error, n > 0, "cuda:", index, " requested but no CUDA device is present",
                kEmulated ? "" : " (no GPU, or no driver: see nvidia-smi)");
  TINYNET_CHECK(Error, index >= 0 && index < n, "cuda:", index, " requested but this machine has ", n, " CUDA device",
                n == 1 ? "" : "s");
  TINYNET_CHECK(Error, index == current_device(), "cuda:", index,
                " requested but the current device is cuda:", current_device(), "; call tinynet::cuda::set_device(",
                index, ") first (one device per process)");
}

/// Makes cuda:`index` the device of this process; call it before creating CUDA tensors.
inline void set_device(int index) {
  const int n = device_count();
  TINYNET_CHECK(Error, index >= 0 && index < n, "set_device(", index, "): this machine has ", n, " CUDA device",
                n == 1 ? "" : "s");
#if defined(__CUDACC__)
  check(cudaSetDevice(index), "cudaSetDevice");
#endif
  detail::current_index() = index;
}

#if defined(__CUDACC__)
/// The stream every tinynet kernel and copy of this process runs on (created on first use).
inline cudaStream_t stream() {
  static cudaStream_t s = [] {
    cudaStream_t created = nullptr;
    check(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    return created;
  }();
  return s;
}
#endif

/// The Thrust execution policy of device kernels: the stream, without synchronising.
inline auto policy() {
#if defined(__CUDACC__)
  return thrust::cuda::par_nosync.on(stream());
#else
  return thrust::device;
#endif
}

/// Device memory for the caching allocator; null when the device is out of memory.
struct DeviceMemory {
  static void* allocate(std::size_t nbytes) {
    check_device(current_device());
#if defined(__CUDACC__)
    void* p = nullptr;
    if (cudaMalloc(&p, nbytes) != cudaSuccess) {
      (void)cudaGetLastError();
      return nullptr;
    }
    return p;
#else
    return std::aligned_alloc(64, nbytes);
#endif
  }
  static void release(void* p) {
#if defined(__CUDACC__)
    (void)cudaFree(p);  // also at process exit, when the context may be gone: ignore errors
#else
    std::free(p);
#endif
  }
};

/// Page-locked host memory, which the GPU reads by DMA while the host goes on: batch
/// uploads from it are asynchronous (Tensor::pin_memory, DataLoader's pin_memory).
struct PinnedHostMemory {
  static void* allocate(std::size_t nbytes) {
#if defined(__CUDACC__)
    void* p = nullptr;
    // DataLoader workers pin batches on their own threads, whose current device would
    // otherwise be 0: a rank on another GPU would open a second context on GPU 0.
    if (!is_available() || cudaSetDevice(current_device()) != cudaSuccess ||
        cudaMallocHost(&p, nbytes) != cudaSuccess) {
      (void)cudaGetLastError();
      return nullptr;
    }
    return p;
#else
    return std::aligned_alloc(64, nbytes);
#endif
  }
  static void release(void* p) {
#if defined(__CUDACC__)
    (void)cudaFreeHost(p);
#else
    std::free(p);
#endif
  }
};

namespace detail {

/// Device-side error codes, raised by kernels that find bad input (an out-of-range class
/// index, say) and reported by the next synchronisation.
enum ErrorCode : int { kNoError = 0, kIndexOutOfRange = 1 };

inline int* error_word() {
  static int* word = [] {
    int* w = static_cast<int*>(DeviceMemory::allocate(sizeof(int)));
    TINYNET_CHECK(Error, w != nullptr, "could not allocate the CUDA error flag");
#if defined(__CUDACC__)
    check(cudaMemsetAsync(w, 0, sizeof(int), stream()), "cudaMemsetAsync");
#else
    *w = 0;
#endif
    return w;
  }();
  return word;
}

}  // namespace detail

namespace detail {

/// Host buffers that asynchronous copies still read, each released once the stream has
/// passed the copy (checked at every new pinned copy and at each synchronisation).
class KeepAlive {
 public:
  void hold(std::shared_ptr<void> owner) {
#if defined(__CUDACC__)
    cudaEvent_t e = nullptr;
    check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    check(cudaEventRecord(e, stream()), "cudaEventRecord");
    std::lock_guard lock(mu_);
    release_done();
    held_.emplace_back(e, std::move(owner));
#else
    (void)owner;  // emulated copies are complete on return
#endif
  }
  void release_done() {
#if defined(__CUDACC__)
    while (!held_.empty() && cudaEventQuery(held_.front().first) == cudaSuccess) {
      (void)cudaEventDestroy(held_.front().first);
      held_.pop_front();
    }
#endif
  }
  void release_all_after_sync() {
#if defined(__CUDACC__)
    std::lock_guard lock(mu_);
    for (auto& [e, owner] : held_) (void)cudaEventDestroy(e);
    held_.clear();
#endif
  }

 private:
#if defined(__CUDACC__)
  std::mutex mu_;
  std::deque<std::pair<cudaEvent_t, std::shared_ptr<void>>> held_;
#endif
};

inline KeepAlive& keep_alive() {
  static auto* k = new KeepAlive();  // leaked: may be used while statics are destroyed
  return *k;
}

}  // namespace detail

/// Called by a kernel: records `code` for the host to report at the next synchronisation.
TINYNET_HOST_DEVICE inline void raise_device_error(int* word, int code) {
#if defined(__CUDA_ARCH__)
  atomicOr(word, code);
#else
  std::atomic_ref<int>(*word).fetch_or(code, std::memory_order_relaxed);
#endif
}

/// Waits for the stream; then throws if a kernel raised an error since the last check.
inline void synchronize() {
  int code = 0;
#if defined(__CUDACC__)
  check(cudaMemcpyAsync(&code, detail::error_word(), sizeof(int), cudaMemcpyDeviceToHost, stream()), "cudaMemcpyAsync");
  check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
  if (code != 0) check(cudaMemsetAsync(detail::error_word(), 0, sizeof(int), stream()), "cudaMemsetAsync");
#else
  code = std::atomic_ref<int>(*detail::error_word()).exchange(0);
#endif
  detail::keep_alive().release_all_after_sync();
  TINYNET_CHECK(IndexError, !(code & detail::kIndexOutOfRange),
                "a CUDA kernel found an index out of range (nll_loss: a target outside [0, classes); index_select: "
                "an index outside the dimension)");
}

/// Where a copy goes from and to.
enum class CopyKind { host_to_device, device_to_host, device_to_device };

/// Copies `nbytes`; a copy to the host waits for it (and reports kernel errors). A copy
/// from pinned host memory (`src_owner` set: the storage that owns `src`) returns at once
/// and keeps the source alive until the stream has read it; from pageable memory the
/// driver stages the data before returning.
inline void copy(void* dst, const void* src, std::size_t nbytes, CopyKind kind,
                 std::shared_ptr<void> src_owner = nullptr) {
  if (nbytes == 0) return;
#if defined(__CUDACC__)
  const cudaMemcpyKind k = kind == CopyKind::host_to_device   ? cudaMemcpyHostToDevice
                           : kind == CopyKind::device_to_host ? cudaMemcpyDeviceToHost
                                                              : cudaMemcpyDeviceToDevice;
  check(cudaMemcpyAsync(dst, src, nbytes, k, stream()), "cudaMemcpyAsync");
#else
  std::memcpy(dst, src, nbytes);
#endif
  if (kind == CopyKind::device_to_host)
    synchronize();
  else if (src_owner)
    detail::keep_alive().hold(std::move(src_owner));
}

/// p[0..n) = value on the device.
template <typename T>
void fill(T* p, std::int64_t n, T value) {
  if (n <= 0) return;
  thrust::fill_n(policy(), p, n, value);
}

namespace detail {

template <typename Dst>
struct ConvertTo {
  template <typename Src>
  TINYNET_HOST_DEVICE Dst operator()(Src v) const {
    return static_cast<Dst>(v);
  }
};

template <typename T>
struct AddScalar {
  T value;
  TINYNET_HOST_DEVICE T operator()(T v) const { return static_cast<T>(v + value); }
};

}  // namespace detail

/// dst[i] = Dst(src[i]) for i in [0, n) on the device, by the types' own conversions (the
/// host's: bfloat16 rounds to nearest, ties to even, from double in one rounding).
template <typename Dst, typename Src>
void convert(Dst* dst, const Src* src, std::int64_t n) {
  if (n <= 0) return;
  thrust::transform(policy(), src, src + n, dst, detail::ConvertTo<Dst>{});
}

/// p[i] += value for i in [0, n) on the device.
template <typename T>
void add_scalar(T* p, std::int64_t n, T value) {
  if (n <= 0) return;
  thrust::transform(policy(), p, p + n, p, detail::AddScalar<T>{value});
}

}  // namespace tinynet::cuda

#else  // !TINYNET_WITH_CUDA

namespace tinynet::cuda {

/// Without the CUDA backend there is no usable device (so code can ask either way).
inline int device_count() { return 0; }
inline bool is_available() { return false; }

}  // namespace tinynet::cuda

#endif  // TINYNET_WITH_CUDA
