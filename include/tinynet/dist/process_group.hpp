#pragma once
/// \file
/// ProcessGroup: the collectives data-parallel training needs (torch.distributed's
/// all_reduce, broadcast, all_gather, barrier), implemented by GlooGroup (TCP) and
/// NcclGroup (GPUs). Every rank must call the same collectives in the same order with
/// the same sizes; every call is bounded by a timeout, after which it throws
/// DistTimeoutError, and a lost peer throws DistError. Either leaves the group unusable.

#include <memory>
#include <optional>
#include <string>

#include "tinynet/core/tensor.hpp"
#include "tinynet/dist/store.hpp"

namespace tinynet::dist {

enum class ReduceOp { sum, avg };

inline const char* reduce_op_name(ReduceOp op) { return op == ReduceOp::sum ? "sum" : "avg"; }

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;

  int rank() const { return rank_; }
  int size() const { return size_; }
  /// The default timeout of every collective.
  Milliseconds timeout() const { return timeout_; }
  /// The store the ranks met through (under this group's prefix); DistributedDataParallel
  /// exchanges model descriptions through it.
  Store& store() const { return *store_; }
  /// "gloo" or "nccl".
  virtual const char* backend() const = 0;

  /// In place: every rank's `t` becomes the element-wise sum (or mean) over ranks.
  /// requires: same numel and dtype on every rank; avg needs a floating dtype.
  virtual void allreduce(Tensor& t, ReduceOp op = ReduceOp::sum, std::optional<Milliseconds> timeout = {}) = 0;
  /// In place: every rank's `t` becomes rank `root`'s.
  virtual void broadcast(Tensor& t, int root = 0, std::optional<Milliseconds> timeout = {}) = 0;
  /// `out` (size() * in.numel() elements, in's dtype) receives every rank's `in`, rank order.
  virtual void allgather(const Tensor& in, Tensor& out, std::optional<Milliseconds> timeout = {}) = 0;
  /// Returns once every rank has called it.
  virtual void barrier(std::optional<Milliseconds> timeout = {}) = 0;

  /// Keeps `resource` (rank 0's store server) alive as long as the group.
  void keep_alive(std::shared_ptr<void> resource) { keep_alive_ = std::move(resource); }

 protected:
  ProcessGroup(int rank, int size, std::shared_ptr<Store> store, Milliseconds timeout)
      : rank_(rank), size_(size), timeout_(timeout), store_(std::move(store)) {}

  /// "rank 1 of 2" for error messages.
  std::string who() const { return "rank " + std::to_string(rank_) + " of " + std::to_string(size_); }

  /// Argument checks shared by the backends; `op` names the collective.
  void check_args(const char* op, const Tensor& t, Device expected) const {
    TINYNET_CHECK(ValueError, t.defined(), op, ": undefined tensor");
    TINYNET_CHECK(TypeError, t.device().type == expected.type, backend(), " ", op, ": tensor is on ", t.device(),
                  ", this backend needs ", expected.is_cpu() ? "cpu" : "cuda", " tensors");
  }

 private:
  int rank_, size_;
  Milliseconds timeout_;
  std::shared_ptr<Store> store_;
  std::shared_ptr<void> keep_alive_;
};

}  // namespace tinynet::dist
