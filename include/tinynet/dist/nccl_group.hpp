#pragma once
/// \file
/// NcclGroup: ProcessGroup over NCCL (CUDA tensors), bootstrapped through the same Store:
/// rank 0 creates NCCL's unique id and publishes it, every rank joins the communicator.
/// The communicator is non-blocking (NCCL's `blocking = 0`), so a collective is enqueued
/// on a stream and polled; a peer that dies or stalls shows up as NCCL's asynchronous
/// error or as the timeout running out, and the communicator is aborted: the caller gets
/// DistError / DistTimeoutError instead of a hang. Include it only in builds with NCCL
/// (the `tinynet::nccl` CMake target defines TINYNET_WITH_NCCL).

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "tinynet/dist/process_group.hpp"

namespace tinynet::dist {

class NcclGroup : public ProcessGroup {
 public:
  /// Joins the NCCL communicator of `size` ranks on CUDA device `device`.
  NcclGroup(std::shared_ptr<Store> store, int rank, int size, int device, Milliseconds timeout)
      : ProcessGroup(rank, size, store, timeout), device_(device) {
    int devices = 0;
    check_cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
    TINYNET_CHECK(DistConfigError, device >= 0 && device < devices, who(), ": NCCL needs CUDA device ", device,
                  " (LOCAL_RANK) but this machine has ", devices);
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    ncclUniqueId id;
    if (rank == 0) {
      check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
      this->store().set("nccl/unique_id", std::string(reinterpret_cast<const char*>(&id), sizeof id));
    }
    const std::string bytes = this->store().get("nccl/unique_id");
    TINYNET_CHECK(DistError, bytes.size() == sizeof id, who(), ": NCCL unique id of ", bytes.size(),
                  " bytes, expected ", sizeof id);
    std::memcpy(&id, bytes.data(), sizeof id);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    check_nccl(ncclCommInitRankConfig(&comm_, size, id, rank, &config), "ncclCommInitRankConfig");
    wait_comm("ncclCommInitRankConfig", std::chrono::steady_clock::now() + timeout);
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;
  ~NcclGroup() override {
    if (comm_ != nullptr) {
      if (broken_.empty())
        ncclCommDestroy(comm_);
      else
        ncclCommAbort(comm_);
    }
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  const char* backend() const override { return "nccl"; }

  void allreduce(Tensor& t, ReduceOp op = ReduceOp::sum, std::optional<Milliseconds> timeout = {}) override {
    check_args("allreduce", t, Device::cuda(device_));
    run("allreduce", t, timeout, [&] {
      return ncclAllReduce(t.raw_data(), t.raw_data(), static_cast<std::size_t>(t.numel()), nccl_type(t.dtype()),
                           op == ReduceOp::sum ? ncclSum : ncclAvg, comm_, stream_);
    });
  }
  void broadcast(Tensor& t, int root = 0, std::optional<Milliseconds> timeout = {}) override {
    check_args("broadcast", t, Device::cuda(device_));
    run("broadcast", t, timeout, [&] {
      return ncclBroadcast(t.raw_data(), t.raw_data(), static_cast<std::size_t>(t.numel()), nccl_type(t.dtype()), root,
                           comm_, stream_);
    });
  }
  void allgather(const Tensor& in, Tensor& out, std::optional<Milliseconds> timeout = {}) override {
    check_args("allgather", in, Device::cuda(device_));
    check_args("allgather", out, Device::cuda(device_));
    TINYNET_CHECK(ShapeError, out.numel() == in.numel() * size() && out.dtype() == in.dtype(),
                  "allgather: output must hold ", size(), " x ", in.numel(), " ", in.dtype(), " elements, got ",
                  out.numel(), " ", out.dtype());
    run("allgather", in, timeout, [&] {
      return ncclAllGather(in.raw_data(), out.raw_data(), static_cast<std::size_t>(in.numel()), nccl_type(in.dtype()),
                           comm_, stream_);
    });
  }
  void barrier(std::optional<Milliseconds> timeout = {}) override {
    std::lock_guard lock(mu_);
    if (barrier_buf_ == nullptr) {
      check_cuda(cudaSetDevice(device_), "cudaSetDevice");
      check_cuda(cudaMalloc(&barrier_buf_, sizeof(float)), "cudaMalloc");
    }
    run_locked("barrier", "", timeout,
               [&] { return ncclAllReduce(barrier_buf_, barrier_buf_, 1, ncclFloat32, ncclSum, comm_, stream_); });
  }

 private:
  static ncclDataType_t nccl_type(DType t) {
    switch (t) {
      case DType::float32:
        return ncclFloat32;
      case DType::float64:
        return ncclFloat64;
      case DType::int32:
        return ncclInt32;
      case DType::int64:
        return ncclInt64;
      case DType::bfloat16:
      case DType::bool_:
        break;
    }
    throw TypeError(
        tinynet::detail::concat("NcclGroup: ", t, " tensors are not communicated (convert with .to(DType::float32))"));
  }

  void check_cuda(cudaError_t e, const char* op) const {
    TINYNET_CHECK(DistError, e == cudaSuccess, who(), ": ", op, " failed: ", cudaGetErrorString(e));
  }
  void check_nccl(ncclResult_t r, const char* op) const {
    TINYNET_CHECK(DistError, r == ncclSuccess || r == ncclInProgress, who(), ": ", op,
                  " failed: ", ncclGetErrorString(r));
  }

  // Polls the communicator until the enqueued call is accepted; aborts it on error or timeout.
  void wait_comm(const std::string& op, std::chrono::steady_clock::time_point deadline) {
    ncclResult_t state = ncclInProgress;
    while (state == ncclInProgress) {
      ncclCommGetAsyncError(comm_, &state);
      if (state == ncclInProgress && std::chrono::steady_clock::now() > deadline) fail(op, "timed out", true);
      if (state == ncclInProgress) std::this_thread::yield();
    }
    if (state != ncclSuccess) fail(op, ncclGetErrorString(state), false);
  }

  [[noreturn]] void fail(const std::string& op, const std::string& why, bool timed_out) {
    broken_ = who() + ": " + op + " failed: " + why;
    ncclCommAbort(comm_);
    comm_ = nullptr;
    if (timed_out) throw DistTimeoutError(broken_);
    throw DistError(broken_);
  }

  template <class F>
  void run(const char* op, const Tensor& t, std::optional<Milliseconds> timeout, F&& enqueue) {
    std::lock_guard lock(mu_);
    run_locked(op, std::to_string(t.numel()) + " " + dtype_name(t.dtype()) + " elements", timeout,
               std::forward<F>(enqueue));
  }

  template <class F>
  void run_locked(const char* op, const std::string& what, std::optional<Milliseconds> timeout, F&& enqueue) {
    const std::string name = std::string(op) + (what.empty() ? "" : " (" + what + ")");
    if (!broken_.empty()) throw DistError(who() + ": " + name + ": the group is unusable after: " + broken_);
    const auto deadline = std::chrono::steady_clock::now() + timeout.value_or(this->timeout());
    // The current device is per thread, and DistributedDataParallel calls from its own.
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    // The tensor was written by kernels on other streams: they must finish before NCCL's
    // stream reads it.
    check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    check_nccl(enqueue(), op);
    wait_comm(name, deadline);
    while (true) {
      const cudaError_t q = cudaStreamQuery(stream_);
      if (q == cudaSuccess) return;
      if (q != cudaErrorNotReady) fail(name, cudaGetErrorString(q), false);
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm_, &async);
      if (async != ncclSuccess && async != ncclInProgress) fail(name, ncclGetErrorString(async), false);
      if (std::chrono::steady_clock::now() > deadline) fail(name, "timed out", true);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  int device_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  void* barrier_buf_ = nullptr;
  std::mutex mu_;
  std::string broken_;
};

}  // namespace tinynet::dist
