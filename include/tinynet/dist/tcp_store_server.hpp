#pragma once
/// \file
/// TCPStoreServer: hosts the key-value store on a port (rank 0 does, on MASTER_PORT,
/// unless a launcher already hosts one). It speaks both dialects in
/// detail/store_protocol.hpp, PyTorch 1.13's and 2.x's, telling them apart per connection,
/// so PyTorch's TCPStore clients can use it too.
///
/// One background thread serves every connection with poll(): a client that sends
/// nothing, half a message, or garbage cannot block the others. Every message is checked
/// against the bounds in store_protocol.hpp before anything is allocated (the requests
/// themselves are handled by detail::StoreEngine); a connection that breaks a rule
/// (unknown command, oversized length, GET of a missing key, a message left incomplete
/// for `incomplete_message_timeout`) is dropped and logged, and connections beyond
/// `max_connections` at a time are refused.

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tinynet/dist/detail/socket.hpp"
#include "tinynet/dist/detail/store_engine.hpp"
#include "tinynet/dist/store.hpp"

namespace tinynet::dist {

struct TCPStoreServerOptions {
  /// Port to listen on, on every interface; 0 picks a free one (see port()).
  int port = 0;
  /// How long binding keeps retrying while the port is in use (a previous run's
  /// process may still be exiting).
  Milliseconds bind_timeout{0};
  /// A connection holding an incomplete message this long is dropped.
  Milliseconds incomplete_message_timeout{10'000};
  /// Connections served at once; more are refused (ranks connect once and stay connected).
  std::size_t max_connections = 512;
  /// Where drop notices go; stderr when empty.
  std::function<void(const std::string&)> log{};
  /// Called each time binding finds the port in use, before waiting to try again; it may
  /// throw to give up with an error of its own (init_process_group: the port's holder is
  /// a second RANK=0 of the same job).
  std::function<void()> on_port_in_use{};
};

class TCPStoreServer {
 public:
  /// Binds and starts serving. Throws DistError naming the port when it cannot bind.
  explicit TCPStoreServer(TCPStoreServerOptions opts = {}) : opts_(std::move(opts)) {
    if (!opts_.log) opts_.log = [](const std::string& m) { std::cerr << m << std::endl; };
    listen_ = bind_listener(opts_.port, detail::Clock::now() + opts_.bind_timeout);
    int pipefd[2];
    if (::pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) != 0)
      throw DistError("TCPStoreServer: pipe: " + detail::errno_text(errno));
    wake_read_ = detail::Fd(pipefd[0]);
    wake_write_ = detail::Fd(pipefd[1]);
    thread_ = std::thread([this] { serve(); });
  }
  TCPStoreServer(const TCPStoreServer&) = delete;
  TCPStoreServer& operator=(const TCPStoreServer&) = delete;
  ~TCPStoreServer() {
    stop_ = true;
    [[maybe_unused]] const ssize_t w = ::write(wake_write_.get(), "x", 1);
    thread_.join();
  }

  /// The port it listens on.
  int port() const { return port_; }
  /// How many connections were dropped for breaking the protocol (for tests and logs).
  std::int64_t dropped_connections() const { return dropped_; }

 private:
  struct Conn {
    detail::Fd fd;
    std::string peer;
    std::string in;
    detail::Clock::time_point incomplete_since{};
  };

  detail::Fd bind_listener(int port, detail::Clock::time_point deadline) {
    while (true) {
      detail::Fd fd(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
      bool v6 = fd.valid();
      if (!v6) fd = detail::Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
      if (!fd.valid()) throw DistError("TCPStoreServer: socket: " + detail::errno_text(errno));
      const int one = 1, zero = 0;
      ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      if (v6) ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);  // IPv4 too
      int rc;
      if (v6) {
        sockaddr_in6 a{};
        a.sin6_family = AF_INET6;
        a.sin6_addr = in6addr_any;
        a.sin6_port = htons(static_cast<std::uint16_t>(port));
        rc = ::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
      } else {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_ANY);
        a.sin_port = htons(static_cast<std::uint16_t>(port));
        rc = ::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
      }
      if (rc == 0 && ::listen(fd.get(), 1024) == 0) {
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len);
        port_ = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                         : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
        detail::set_nonblocking(fd.get());
        return fd;
      }
      const int err = errno;
      if (err == EADDRINUSE && opts_.on_port_in_use) opts_.on_port_in_use();
      if (err != EADDRINUSE || detail::Clock::now() >= deadline)
        throw DistError("TCPStoreServer: cannot listen on port " + std::to_string(port) + ": " +
                        detail::errno_text(err) +
                        (err == EADDRINUSE ? " (another process holds it; if a launcher hosts its store there, as "
                                             "torchrun's static rendezvous does, tinynet uses it when "
                                             "TORCHELASTIC_USE_AGENT_STORE=True)"
                                           : ""));
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  void drop(std::size_t i, const std::string& reason) {
    ++dropped_;
    opts_.log("tinynet store (port " + std::to_string(port_) + "): dropped connection from " + conns_[i].peer + ": " +
              reason);
    close_conn(i);
  }

  void close_conn(std::size_t i) {
    engine_.close(conns_[i].fd.get());
    conns_.erase(conns_.begin() + static_cast<std::ptrdiff_t>(i));
  }

  void serve() {
    while (!stop_) {
      std::vector<pollfd> fds;
      fds.push_back({listen_.get(), POLLIN, 0});
      fds.push_back({wake_read_.get(), POLLIN, 0});
      for (auto& c : conns_)
        fds.push_back({c.fd.get(), static_cast<short>(POLLIN | (engine_.output(c.fd.get()).empty() ? 0 : POLLOUT)), 0});
      ::poll(fds.data(), fds.size(), 500);
      if (stop_) return;
      if (fds[0].revents & POLLIN) accept_all();
      // Connections are matched by descriptor: accept_all and drops change conns_.
      for (std::size_t k = 2; k < fds.size(); ++k) {
        if (fds[k].revents == 0) continue;
        for (std::size_t i = 0; i < conns_.size(); ++i) {
          if (conns_[i].fd.get() != fds[k].fd) continue;
          service(i, fds[k].revents);
          break;
        }
      }
      expire_incomplete();
    }
  }

  void accept_all() {
    while (true) {
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      const int fd = ::accept4(listen_.get(), reinterpret_cast<sockaddr*>(&ss), &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) return;
      Conn c;
      c.fd = detail::Fd(fd);
      c.peer = detail::address_text(reinterpret_cast<sockaddr*>(&ss));
      if (conns_.size() >= opts_.max_connections) {  // a flood must not exhaust descriptors Gloo needs
        ++dropped_;
        opts_.log("tinynet store (port " + std::to_string(port_) + "): refused connection from " + c.peer +
                  ": already serving " + std::to_string(opts_.max_connections) + " connections");
        continue;
      }
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      engine_.open(fd);
      conns_.push_back(std::move(c));
    }
  }

  void service(std::size_t i, short revents) {
    Conn& c = conns_[i];
    std::string& out = engine_.output(c.fd.get());
    if (revents & POLLOUT) {
      const ssize_t k = ::send(c.fd.get(), out.data(), out.size(), MSG_NOSIGNAL);
      if (k > 0)
        out.erase(0, static_cast<std::size_t>(k));
      else if (k < 0 && errno != EAGAIN && errno != EINTR)
        return close_conn(i);
    }
    if (revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[65536];
      const ssize_t k = ::recv(c.fd.get(), buf, sizeof buf, 0);
      if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) {
        // A clean close between messages is a client leaving; inside one, a broken client.
        if (!c.in.empty())
          return drop(i, "closed in the middle of a message (" + std::to_string(c.in.size()) + " bytes)");
        return close_conn(i);
      }
      if (k > 0) c.in.append(buf, static_cast<std::size_t>(k));
      try {
        engine_.feed(c.fd.get(), c.in);
      } catch (const detail::StoreProtocolError& e) {
        return drop(i, e.reason);
      }
      c.incomplete_since = c.in.empty() ? detail::Clock::time_point{} : detail::Clock::now();
    }
    if (out.size() > 2 * detail::kMaxValueBytes) drop(i, "does not read its replies");
  }

  void expire_incomplete() {
    const auto now = detail::Clock::now();
    for (std::size_t i = 0; i < conns_.size();) {
      const Conn& c = conns_[i];
      if (!c.in.empty() && now - c.incomplete_since > opts_.incomplete_message_timeout)
        drop(i, "sent an incomplete message and nothing more for " +
                    std::to_string(opts_.incomplete_message_timeout.count()) + " ms");
      else
        ++i;
    }
  }

  TCPStoreServerOptions opts_;
  detail::Fd listen_, wake_read_, wake_write_;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<std::int64_t> dropped_{0};
  std::vector<Conn> conns_;
  detail::StoreEngine engine_;
  std::thread thread_;
};

}  // namespace tinynet::dist
