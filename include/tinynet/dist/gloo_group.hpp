#pragma once
/// \file
/// GlooGroup: ProcessGroup over Gloo's TCP transport (CPU tensors). The collectives are
/// Gloo's own (ring all-reduce, ...); this class bootstraps Gloo's full mesh through a
/// Store, adds timeouts and turns Gloo's errors into DistError messages that name the
/// collective, this rank and the peer rank behind the failing connection.

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>

#include <csignal>
#include <mutex>
#include <string>
#include <vector>

#include "tinynet/dist/gloo_store.hpp"
#include "tinynet/dist/process_group.hpp"

namespace tinynet::dist {

struct GlooOptions {
  /// Default timeout of every collective (and of connecting the mesh).
  Milliseconds timeout{std::chrono::minutes(30)};
  /// Address to listen on for peers (an IP or host name). Empty: `interface` if set, else
  /// the host name.
  std::string hostname{};
  /// Network interface to listen on ("eth0"), as GLOO_SOCKET_IFNAME gives it.
  std::string interface {};
};

class GlooGroup : public ProcessGroup {
 public:
  /// Connects to every other rank, exchanging addresses through `store`.
  /// Throws DistError (or DistTimeoutError) naming this rank when the mesh cannot form.
  GlooGroup(std::shared_ptr<Store> store, int rank, int size, GlooOptions opts = {})
      : ProcessGroup(rank, size, store, opts.timeout) {
    TINYNET_CHECK(DistConfigError, size >= 1 && rank >= 0 && rank < size, "GlooGroup: rank ", rank, " is not in [0, ",
                  size, ")");
    // Gloo writes to its sockets without MSG_NOSIGNAL: a peer that died would kill this
    // process with SIGPIPE instead of raising "Connection closed by peer". Ignore it unless
    // the program installed its own handler.
    struct sigaction old {};
    if (::sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) std::signal(SIGPIPE, SIG_IGN);
    try {
      gloo::transport::tcp::attr attr;
      if (!opts.interface.empty())
        attr.iface = opts.interface;
      else if (!opts.hostname.empty())
        attr.hostname = opts.hostname;
      else {
        char host[256] = {};
        ::gethostname(host, sizeof host - 1);
        attr.hostname = host;
      }
      auto device = gloo::transport::tcp::CreateDevice(attr);
      auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
      context->setTimeout(opts.timeout);
      GlooStore gloo_store(std::make_shared<PrefixStore>("gloo", store));
      context->connectFullMesh(gloo_store, device);
      context_ = std::move(context);
    } catch (const DistError&) {
      throw;
    } catch (const std::exception& e) {
      throw DistError(who() + ": connecting to the other ranks (Gloo full mesh) failed: " + e.what());
    }
    learn_peer_addresses();
  }

  const char* backend() const override { return "gloo"; }

  void allreduce(Tensor& t, ReduceOp op = ReduceOp::sum, std::optional<Milliseconds> timeout = {}) override {
    check_args("allreduce", t, Device::cpu());
    TINYNET_CHECK(TypeError, op == ReduceOp::sum || is_floating(t.dtype()),
                  "allreduce avg needs a floating tensor, got ", t.dtype());
    TINYNET_CHECK(TypeError, t.dtype() != DType::bfloat16, "allreduce: got a bfloat16 tensor",
                  tinynet::detail::compute_dtype_hint(t.dtype()));
    run("allreduce", describe(t) + ", " + reduce_op_name(op), [&](std::uint32_t tag) {
      if (t.numel() == 0) return;
      dispatch_arithmetic(t.dtype(), "allreduce", [&]<typename T>() {
        gloo::AllreduceOptions o(context_);
        o.setOutput(t.data<T>(), static_cast<std::size_t>(t.numel()));
        o.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, std::size_t)>(&gloo::sum<T>));
        o.setTag(tag);
        o.setTimeout(timeout.value_or(this->timeout()));
        gloo::allreduce(o);
      });
    });
    if (op == ReduceOp::avg && size() > 1) {
      dispatch_floating(t.dtype(), "allreduce", [&]<typename T>() {
        T* p = t.data<T>();
        const T n = static_cast<T>(size());
        for (std::int64_t i = 0, e = t.numel(); i < e; ++i) p[i] /= n;
      });
    }
  }

  void broadcast(Tensor& t, int root = 0, std::optional<Milliseconds> timeout = {}) override {
    check_args("broadcast", t, Device::cpu());
    TINYNET_CHECK(ValueError, root >= 0 && root < size(), "broadcast: root ", root, " is not a rank of a group of ",
                  size());
    run("broadcast", describe(t) + " from rank " + std::to_string(root), [&](std::uint32_t tag) {
      if (t.numel() == 0) return;
      gloo::BroadcastOptions o(context_);
      o.setOutput(static_cast<std::uint8_t*>(t.raw_data()), t.nbytes());
      o.setRoot(root);
      o.setTag(tag);
      o.setTimeout(timeout.value_or(this->timeout()));
      gloo::broadcast(o);
    });
  }

  void allgather(const Tensor& in, Tensor& out, std::optional<Milliseconds> timeout = {}) override {
    check_args("allgather", in, Device::cpu());
    check_args("allgather", out, Device::cpu());
    TINYNET_CHECK(ShapeError, out.numel() == in.numel() * size() && out.dtype() == in.dtype(),
                  "allgather: output must hold ", size(), " x ", in.numel(), " ", in.dtype(), " elements, got ",
                  out.numel(), " ", out.dtype());
    run("allgather", describe(in), [&](std::uint32_t tag) {
      if (in.numel() == 0) return;
      gloo::AllgatherOptions o(context_);
      o.setInput(static_cast<std::uint8_t*>(in.raw_data()), in.nbytes());
      o.setOutput(static_cast<std::uint8_t*>(out.raw_data()), out.nbytes());
      o.setTag(tag);
      o.setTimeout(timeout.value_or(this->timeout()));
      gloo::allgather(o);
    });
  }

  void barrier(std::optional<Milliseconds> timeout = {}) override {
    run("barrier", "", [&](std::uint32_t tag) {
      gloo::BarrierOptions o(context_);
      o.setTag(tag);
      o.setTimeout(timeout.value_or(this->timeout()));
      gloo::barrier(o);
    });
  }

 private:
  static std::string describe(const Tensor& t) {
    return std::to_string(t.numel()) + " " + dtype_name(t.dtype()) + " elements";
  }

  // Gloo names the peer of a failed connection by its listening address; each rank
  // publishes its own so errors can say which rank that is.
  void learn_peer_addresses() {
    if (size() == 1) return;
    const int peer = rank() == 0 ? 1 : 0;
    std::string own = context_->getPair(peer)->address().str();
    own = own.substr(0, own.find('$'));  // drop the pair's sequence number
    PrefixStore addresses("gloo_listen", std::shared_ptr<Store>(&store(), [](Store*) {}));
    addresses.set(std::to_string(rank()), own);
    peer_addresses_.resize(static_cast<std::size_t>(size()));
    for (int r = 0; r < size(); ++r) peer_addresses_[static_cast<std::size_t>(r)] = addresses.get(std::to_string(r));
  }

  std::string peer_of(const std::string& message) const {
    for (int r = 0; r < size(); ++r) {
      if (r == rank()) continue;
      const std::string& a = peer_addresses_[static_cast<std::size_t>(r)];
      for (auto pos = message.find(a); pos != std::string::npos; pos = message.find(a, pos + 1)) {
        const std::size_t end = pos + a.size();
        if (end == message.size() || !std::isdigit(static_cast<unsigned char>(message[end])))
          return " (peer: rank " + std::to_string(r) + ")";
      }
    }
    return "";
  }

  template <class F>
  void run(const char* op, const std::string& what, F&& f) {
    std::lock_guard lock(mu_);
    const std::string name = who() + ": " + op + (what.empty() ? "" : " (" + what + ")");
    if (!broken_.empty())
      throw DistError(name + ": the process group is unusable after an earlier failure: " + broken_);
    try {
      f(next_tag_++);
    } catch (const std::exception& e) {
      const std::string msg = e.what();
      broken_ = name + " failed: " + msg + peer_of(msg);
      if (msg.find("imeout") != std::string::npos || msg.find("Timed out") != std::string::npos)
        throw DistTimeoutError(broken_);
      throw DistError(broken_);
    }
  }

  std::shared_ptr<gloo::Context> context_;
  std::vector<std::string> peer_addresses_;
  std::mutex mu_;
  std::uint32_t next_tag_ = 0;
  std::string broken_;
};

}  // namespace tinynet::dist
