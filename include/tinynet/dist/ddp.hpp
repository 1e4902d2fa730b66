#pragma once
/// \file
/// DistributedDataParallel: data-parallel training of any Module (Sequential or
/// free-form), as torch.nn.parallel.DistributedDataParallel does it.
///
/// At construction the ranks check that they hold the same model (parameter and buffer
/// names, shapes, dtypes, bucket layout: hashed and all-gathered, so a mismatch is an
/// error naming the first difference rather than a Gloo abort), then every rank takes
/// rank 0's parameters and buffers. During backward, a hook on each parameter copies its
/// gradient into its bucket as soon as it is complete; a full bucket is all-reduced on a
/// communication thread while backward goes on with the layers below. When the last
/// bucket is reduced, every gradient holds the average over ranks, so `backward()`
/// returns with the same gradients, bit for bit, on every rank.
///
///     auto pg = dist::init_process_group("gloo");
///     dist::DistributedDataParallel ddp(model, pg);
///     Tensor loss = nll_loss(ddp(x), y);  // forward through the wrapper
///     loss.backward();                    // gradients averaged over ranks
///     optimizer.step();
///
/// Every parameter must receive a gradient in every backward, unless
/// `find_unused_parameters` is set: then each forward walks the tape back from its output
/// and counts the parameters it cannot reach as done with a zero gradient. Buffers (BatchNorm's running statistics) are
/// taken from rank 0 at construction and, as in PyTorch, again before every forward (`broadcast_buffers`). `no_sync()`
/// accumulates gradients over several backward passes without communicating.

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tinynet/autograd/node.hpp"
#include "tinynet/core/creation.hpp"
#include "tinynet/dist/process_group.hpp"

namespace tinynet::dist {

struct DistributedDataParallelOptions {
  /// Gradients per bucket, in MiB (PyTorch's bucket_cap_mb).
  double bucket_cap_mb = 25.0;
  /// The first bucket (the last layers' gradients, ready first) is kept small so
  /// communication starts early, as PyTorch does.
  double first_bucket_cap_mb = 1.0;
  /// Before each forward, every rank takes rank 0's buffers (PyTorch's broadcast_buffers),
  /// so that running statistics do not drift apart between ranks.
  bool broadcast_buffers = true;
  /// After each forward, find the parameters its output does not depend on and reduce
  /// zeros for them, so that models which skip some parameters in some steps (or on some
  /// ranks) still train (PyTorch's find_unused_parameters). Costs a walk over the tape per
  /// forward; the forward must return a Tensor. An unused parameter's gradient becomes the
  /// average over ranks, zero where no rank used it.
  bool find_unused_parameters = false;
};

namespace detail {

/// One DDP instance's gradient reduction state, shared with the parameters' hooks (which
/// outlive the DDP object: hooks cannot be removed from a tensor, so they check `active`).
class Reducer {
 public:
  struct Bucket {
    std::vector<std::size_t> params;    // indices into params_
    std::vector<std::int64_t> offsets;  // element offset of each in `flat`
    Tensor flat;
    std::vector<Tensor> views;  // each parameter's part of `flat`, shaped like it
    std::size_t pending = 0;    // parameters whose gradient this pass still lacks
    std::exception_ptr error;
    bool done = false;
  };

  Reducer(std::shared_ptr<ProcessGroup> pg, std::vector<std::pair<std::string, Tensor>> params,
          const DistributedDataParallelOptions& opts)
      : pg_(std::move(pg)), params_(std::move(params)) {
    build_buckets(opts);
    for (std::size_t i = 0; i < params_.size(); ++i) ready_.push_back(false);
    worker_ = std::thread([this] { work(); });
  }
  ~Reducer() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  bool active = true;
  /// False inside DistributedDataParallel::no_sync(): gradients stay local.
  bool sync = true;

  const std::vector<Bucket>& buckets() const { return buckets_; }
  const std::vector<std::pair<std::string, Tensor>>& params() const { return params_; }

  /// Throws if the previous backward left some parameters without a gradient.
  void check_idle() const {
    if (next_launch_ == 0 && std::none_of(ready_.begin(), ready_.end(), [](bool b) { return b; })) return;
    throw Error("DistributedDataParallel: the previous backward did not produce gradients for " + unready() +
                "; every parameter must take part in the loss, or construct DistributedDataParallel with "
                "{.find_unused_parameters = true}");
  }

  /// Parameter i takes no part in this pass's loss: it counts as ready with a zero gradient.
  void mark_unused(std::size_t i) {
    Bucket& b = buckets_[bucket_of_[i]];
    b.views[slot_of_[i]].fill_(0.0);
    ready(i);
  }

  /// Called by parameter i's hook once its gradient is complete.
  void on_grad_ready(std::size_t i) {
    TINYNET_CHECK(Error, !ready_[i], "DistributedDataParallel: parameter '", params_[i].first,
                  "' got a second gradient before the reduction of the first finished; parameters without a "
                  "gradient stall it: ",
                  unready());
    buckets_[bucket_of_[i]].views[slot_of_[i]].copy_(params_[i].second.grad());
    ready(i);
  }

 private:
  void ready(std::size_t i) {
    ready_[i] = true;
    --buckets_[bucket_of_[i]].pending;
    // Buckets launch in index order on every rank, so the collectives line up.
    while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) launch(next_launch_++);
    if (next_launch_ == buckets_.size()) finish();
  }

  void build_buckets(const DistributedDataParallelOptions& opts) {
    bucket_of_.resize(params_.size());
    slot_of_.resize(params_.size());
    std::int64_t bytes = 0;
    // Reverse declaration order: backward produces the last layers' gradients first.
    for (std::size_t k = params_.size(); k-- > 0;) {
      const Tensor& p = params_[k].second;
      const double cap = (buckets_.size() == 1 ? opts.first_bucket_cap_mb : opts.bucket_cap_mb) * 1024 * 1024;
      const bool fits = !buckets_.empty() && !buckets_.back().params.empty() &&
                        params_[buckets_.back().params.front()].second.dtype() == p.dtype() &&
                        static_cast<double>(bytes + static_cast<std::int64_t>(p.nbytes())) <= cap;
      if (!fits) {
        buckets_.emplace_back();
        bytes = 0;
      }
      Bucket& b = buckets_.back();
      bucket_of_[k] = buckets_.size() - 1;
      slot_of_[k] = b.params.size();
      b.offsets.push_back(b.params.empty() ? 0 : b.offsets.back() + params_[b.params.back()].second.numel());
      b.params.push_back(k);
      bytes += static_cast<std::int64_t>(p.nbytes());
    }
    for (Bucket& b : buckets_) {
      const Tensor& last = params_[b.params.back()].second;
      b.flat = empty({b.offsets.back() + last.numel()}, {last.dtype(), last.device(), false});
      for (std::size_t k = 0; k < b.params.size(); ++k)
        b.views.push_back(slice(b.flat, b.offsets[k], params_[b.params[k]].second.shape()));
      b.pending = b.params.size();
    }
  }

  std::string unready() const {
    std::string out;
    for (std::size_t i = 0; i < params_.size(); ++i)
      if (!ready_[i]) out += (out.empty() ? "" : ", ") + params_[i].first;
    return out.empty() ? "(none)" : out;
  }

  std::string describe(std::size_t bi) const {
    const Bucket& b = buckets_[bi];
    std::string names;
    for (std::size_t k = 0; k < b.params.size() && k < 4; ++k) names += (k ? ", " : "") + params_[b.params[k]].first;
    if (b.params.size() > 4) names += ", ...";
    return "DistributedDataParallel: all-reducing gradient bucket " + std::to_string(bi + 1) + " of " +
           std::to_string(buckets_.size()) + " (" + names + "): ";
  }

  void launch(std::size_t bi) {
    {
      std::lock_guard lock(mu_);
      queue_.push_back(bi);
    }
    cv_.notify_all();
  }

  void work() {
    std::unique_lock lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      const std::size_t bi = queue_.front();
      queue_.pop_front();
      lock.unlock();
      std::exception_ptr error;
      try {
        pg_->allreduce(buckets_[bi].flat, ReduceOp::avg);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      buckets_[bi].error = error;
      buckets_[bi].done = true;
      cv_.notify_all();
    }
  }

  // Waits for every bucket, then writes the averages back into the gradients.
  void finish() {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock,
               [&] { return std::all_of(buckets_.begin(), buckets_.end(), [](const Bucket& b) { return b.done; }); });
    }
    next_launch_ = 0;
    std::fill(ready_.begin(), ready_.end(), false);
    for (std::size_t bi = 0; bi < buckets_.size(); ++bi) {
      Bucket& b = buckets_[bi];
      b.done = false;
      b.pending = b.params.size();
      if (b.error) {
        const std::exception_ptr e = std::exchange(b.error, nullptr);
        try {
          std::rethrow_exception(e);
        } catch (const DistTimeoutError& x) {
          throw DistTimeoutError(describe(bi) + x.what());
        } catch (const DistError& x) {
          throw DistError(describe(bi) + x.what());
        }
      }
    }
    for (Bucket& b : buckets_)
      for (std::size_t k = 0; k < b.params.size(); ++k) {
        Tensor& p = params_[b.params[k]].second;
        if (p.grad().defined())
          p.grad().copy_(b.views[k]);
        else
          p.set_grad(b.views[k].clone());  // unused here: the other ranks' average
      }
  }

  // `shape`-d elements of `flat` from `offset` on, sharing its storage (on any device).
  static Tensor slice(const Tensor& flat, std::int64_t offset, const Shape& shape) {
    auto v = std::make_shared<tinynet::detail::TensorImpl>();
    v->storage = flat.impl().storage;
    v->offset = flat.impl().offset + offset;
    v->shape = shape;
    v->dtype = flat.dtype();
    return Tensor(std::move(v));
  }

  std::shared_ptr<ProcessGroup> pg_;
  std::vector<std::pair<std::string, Tensor>> params_;
  std::vector<Bucket> buckets_;
  std::vector<std::size_t> bucket_of_, slot_of_;
  std::vector<bool> ready_;
  std::size_t next_launch_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::size_t> queue_;
  bool stop_ = false;
  std::thread worker_;
};

/// FNV-1a: a stable hash of the model description, the same on every machine.
inline std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

inline std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

inline int& ddp_instance_counter() {
  static int n = 0;
  return n;
}

}  // namespace detail

template <class M>
class DistributedDataParallel {
 public:
  /// Wraps `module` (which must outlive this object). Collective: every rank constructs
  /// its DDP at the same point. Throws DistConfigError naming the first difference when
  /// the ranks' models or bucket layouts differ.
  DistributedDataParallel(M& module, std::shared_ptr<ProcessGroup> pg, DistributedDataParallelOptions opts = {})
      : module_(module),
        pg_(std::move(pg)),
        broadcast_buffers_(opts.broadcast_buffers),
        find_unused_(opts.find_unused_parameters) {
    TINYNET_CHECK(ValueError, pg_ != nullptr, "DistributedDataParallel: no process group");
    TINYNET_CHECK(ValueError, opts.bucket_cap_mb > 0 && opts.first_bucket_cap_mb > 0,
                  "DistributedDataParallel: bucket caps must be positive");
    auto params = module_.named_parameters();
    TINYNET_CHECK(ValueError, !params.empty(), "DistributedDataParallel: the module has no parameters");
    reducer_ = std::make_shared<detail::Reducer>(pg_, params, opts);
    check_agreement();
    sync_from_rank0();
    for (std::size_t i = 0; i < params.size(); ++i) {
      std::weak_ptr<detail::Reducer> weak = reducer_;
      params[i].second.register_post_accumulate_grad_hook([weak, i](Tensor&) {
        if (auto r = weak.lock(); r && r->active && r->sync) r->on_grad_ready(i);
      });
    }
  }
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;
  ~DistributedDataParallel() { reducer_->active = false; }

  /// While it lives, backward leaves gradients local (see no_sync()); restores the previous
  /// state when it goes.
  class NoSyncGuard {
   public:
    explicit NoSyncGuard(detail::Reducer& reducer) : reducer_(reducer), previous_(reducer.sync) {
      reducer.sync = false;
    }
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;
    ~NoSyncGuard() { reducer_.sync = previous_; }

   private:
    detail::Reducer& reducer_;
    bool previous_;
  };

  /// Gradient accumulation without communication, as torch's DDP.no_sync(): while the
  /// returned guard lives, backward only accumulates each rank's gradients into `grad()`;
  /// the first backward after it all-reduces what has accumulated. Take it between
  /// backward passes, for every micro-batch but the last:
  ///
  ///     optimizer.zero_grad();
  ///     {
  ///       auto no_sync = ddp.no_sync();
  ///       for (k = 0; k < K - 1; ++k) (nll_loss(ddp(x[k]), y[k]) / K).backward();  // local
  ///     }
  ///     (nll_loss(ddp(x[K - 1]), y[K - 1]) / K).backward();  // all-reduces the K micro-batches' sum
  ///     optimizer.step();
  [[nodiscard]] NoSyncGuard no_sync() { return NoSyncGuard(*reducer_); }

  /// The module's forward, after checking the previous backward's reduction completed
  /// and (broadcast_buffers) taking rank 0's buffers. Collective when it broadcasts.
  template <class... Args>
  decltype(auto) operator()(Args&&... args) {
    reducer_->check_idle();
    if (broadcast_buffers_ && pg_->size() > 1) broadcast_buffers();
    decltype(auto) out = module_(std::forward<Args>(args)...);
    if (find_unused_ && reducer_->sync) {
      if constexpr (std::is_same_v<std::remove_cvref_t<decltype(out)>, Tensor>)
        mark_unused(out);
      else
        throw ValueError("DistributedDataParallel: find_unused_parameters needs a forward that returns a Tensor");
    }
    return out;
  }
  M& module() { return module_; }
  ProcessGroup& process_group() { return *pg_; }
  /// Parameter names of each bucket, in launch order.
  std::vector<std::vector<std::string>> bucket_names() const {
    std::vector<std::vector<std::string>> out;
    for (const auto& b : reducer_->buckets()) {
      out.emplace_back();
      for (std::size_t i : b.params) out.back().push_back(reducer_->params()[i].first);
    }
    return out;
  }

 private:
  std::string description() const {
    std::ostringstream d;
    for (const auto& [name, t] : module_.named_parameters())
      d << "parameter " << name << " " << t.shape() << " " << t.dtype() << "\n";
    for (const auto& [name, t] : module_.named_buffers())
      d << "buffer " << name << " " << t.shape() << " " << t.dtype() << "\n";
    for (const auto& b : bucket_names()) d << "bucket of " << b.size() << " starting at " << b.front() << "\n";
    return d.str();
  }

  void check_agreement() {
    const std::string mine = description();
    const std::string key = "ddp/" + std::to_string(detail::ddp_instance_counter()++) + "/model/";
    pg_->store().set(key + std::to_string(pg_->rank()), mine);
    const auto hash = static_cast<std::int64_t>(detail::fnv1a(mine));
    // On the parameters' device: NCCL gathers only CUDA tensors.
    const Device device = module_.named_parameters().front().second.device();
    const Tensor h = from_vector<std::int64_t>({hash}, {1}, {DType::int64, device});
    Tensor all = empty({pg_->size()}, {DType::int64, device});
    pg_->allgather(h, all);  // fixed size on every rank: safe before agreement is known
    const Tensor gathered = all.to(Device::cpu());
    const std::int64_t* hashes = gathered.data<std::int64_t>();
    for (int r = 0; r < pg_->size(); ++r) {
      if (hashes[r] == hash) continue;
      const std::string theirs = pg_->store().get(key + std::to_string(r));
      const auto a = detail::split_lines(mine), b = detail::split_lines(theirs);
      std::size_t i = 0;
      while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
      const std::string here = i < a.size() ? "'" + a[i] + "'" : "nothing more";
      const std::string there = i < b.size() ? "'" + b[i] + "'" : "nothing more";
      // Every rank saw the same hashes and is here: wait until all have read what they
      // compare with before anyone exits (rank 0's exit takes the store with it).
      try {
        pg_->barrier();
      } catch (const DistError&) {
        // A rank gone already: the mismatch is still the error to report.
      }
      throw DistConfigError("DistributedDataParallel: rank " + std::to_string(pg_->rank()) +
                            "'s model differs from rank " + std::to_string(r) + "'s: entry " + std::to_string(i + 1) +
                            " is " + here + " here and " + there + " on rank " + std::to_string(r) +
                            "; every rank must build the same model");
    }
  }

  void sync_from_rank0() {
    for (auto& [name, t] : module_.named_parameters()) {
      Tensor data = t.detach();
      pg_->broadcast(data, 0);
    }
    broadcast_buffers();
  }

  // Marks the parameters that no path of the tape from `out` reaches.
  void mark_unused(const Tensor& out) {
    std::unordered_set<const void*> reached;
    std::unordered_set<const autograd::Node*> seen;
    std::vector<const autograd::Node*> todo;
    if (out.grad_fn())
      todo.push_back(out.grad_fn().get());
    else
      reached.insert(out.impl_ptr().get());  // the output is a parameter itself
    while (!todo.empty()) {
      const autograd::Node* n = todo.back();
      todo.pop_back();
      if (!seen.insert(n).second) continue;
      for (const autograd::Edge& e : n->next) {
        if (e.fn)
          todo.push_back(e.fn.get());
        else if (e.leaf)
          reached.insert(e.leaf.get());
      }
    }
    const auto& params = reducer_->params();
    for (std::size_t i = 0; i < params.size(); ++i)
      if (!reached.count(params[i].second.impl_ptr().get())) reducer_->mark_unused(i);
  }

  void broadcast_buffers() {
    for (auto& [name, t] : module_.named_buffers()) {
      Tensor data = t.detach();
      pg_->broadcast(data, 0);
    }
  }

  M& module_;
  std::shared_ptr<ProcessGroup> pg_;
  bool broadcast_buffers_;
  bool find_unused_;
  std::shared_ptr<detail::Reducer> reducer_;
};

}  // namespace tinynet::dist
