#pragma once
/// \file
/// TCPStoreServer: hosts the key-value store on a port (rank 0 does, on MASTER_PORT,
/// unless a launcher already hosts one). It speaks the protocol in
/// detail/store_protocol.hpp, so PyTorch's TCPStore clients can use it too.
///
/// One background thread serves every connection with poll(): a client that sends
/// nothing, half a message, or garbage cannot block the others. Every message is checked
/// against the bounds in store_protocol.hpp before anything is allocated; a connection
/// that breaks a rule (unknown command, oversized length, GET of a missing key, a
/// message left incomplete for `incomplete_message_timeout`) is dropped and logged.

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "tinynet/dist/detail/socket.hpp"
#include "tinynet/dist/detail/store_protocol.hpp"

namespace tinynet::dist {

struct TCPStoreServerOptions {
  /// Port to listen on, on every interface; 0 picks a free one (see port()).
  int port = 0;
  /// How long binding keeps retrying while the port is in use (a previous run's
  /// process may still be exiting).
  Milliseconds bind_timeout{0};
  /// A connection holding an incomplete message this long is dropped.
  Milliseconds incomplete_message_timeout{10'000};
  /// Where drop notices go; stderr when empty.
  std::function<void(const std::string&)> log{};
};

class TCPStoreServer {
 public:
  /// Binds and starts serving. Throws DistError naming the port when it cannot bind.
  explicit TCPStoreServer(TCPStoreServerOptions opts = {}) : opts_(std::move(opts)) {
    if (!opts_.log) opts_.log = [](const std::string& m) { std::cerr << m << std::endl; };
    listen_ = bind_listener(opts_.port, detail::Clock::now() + opts_.bind_timeout);
    int pipefd[2];
    if (::pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) != 0) throw DistError("TCPStoreServer: pipe: " + detail::errno_text(errno));
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
    std::string out;
    std::size_t awaiting = 0;  // keys of a pending WAIT not yet set
    detail::Clock::time_point incomplete_since{};
  };
  struct ProtocolError {
    std::string reason;
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
    const int fd = conns_[i].fd.get();
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      std::erase(it->second, fd);
      it = it->second.empty() ? waiting_.erase(it) : std::next(it);
    }
    conns_.erase(conns_.begin() + static_cast<std::ptrdiff_t>(i));
  }

  Conn* find_conn(int fd) {
    for (auto& c : conns_)
      if (c.fd.get() == fd) return &c;
    return nullptr;
  }

  void serve() {
    while (!stop_) {
      std::vector<pollfd> fds;
      fds.push_back({listen_.get(), POLLIN, 0});
      fds.push_back({wake_read_.get(), POLLIN, 0});
      for (auto& c : conns_) fds.push_back({c.fd.get(), static_cast<short>(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
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
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      conns_.push_back(std::move(c));
    }
  }

  void service(std::size_t i, short revents) {
    Conn& c = conns_[i];
    if (revents & POLLOUT) {
      const ssize_t k = ::send(c.fd.get(), c.out.data(), c.out.size(), MSG_NOSIGNAL);
      if (k > 0) c.out.erase(0, static_cast<std::size_t>(k));
      else if (k < 0 && errno != EAGAIN && errno != EINTR) return close_conn(i);
    }
    if (revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[65536];
      const ssize_t k = ::recv(c.fd.get(), buf, sizeof buf, 0);
      if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) {
        // A clean close between messages is a client leaving; inside one, a broken client.
        if (!c.in.empty()) return drop(i, "closed in the middle of a message (" + std::to_string(c.in.size()) + " bytes)");
        return close_conn(i);
      }
      if (k > 0) c.in.append(buf, static_cast<std::size_t>(k));
      try {
        while (!c.in.empty()) {
          const std::optional<std::size_t> used = handle(c);
          if (!used) break;
          c.in.erase(0, *used);
        }
      } catch (const ProtocolError& e) {
        return drop(i, e.reason);
      }
      c.incomplete_since = c.in.empty() ? detail::Clock::time_point{} : detail::Clock::now();
    }
    if (c.out.size() > 2 * detail::kMaxValueBytes) drop(i, "does not read its replies");
  }

  void expire_incomplete() {
    const auto now = detail::Clock::now();
    for (std::size_t i = 0; i < conns_.size();) {
      const Conn& c = conns_[i];
      if (!c.in.empty() && now - c.incomplete_since > opts_.incomplete_message_timeout)
        drop(i, "sent an incomplete message and nothing more for " +
                    std::to_string(opts_.incomplete_message_timeout.count()) + " ms");
      else ++i;
    }
  }

  // A cursor over a connection's input; running out means "wait for more bytes".
  struct Reader {
    const std::string& in;
    std::size_t pos = 1;
    bool short_ = false;
    std::optional<std::uint64_t> u64() {
      if (in.size() - pos < 8) return std::nullopt;
      std::uint64_t v;
      std::memcpy(&v, in.data() + pos, 8);
      pos += 8;
      return v;
    }
    std::optional<std::string> bytes(std::uint64_t limit, const char* what) {
      const auto n = u64();
      if (!n) return std::nullopt;
      if (*n > limit)
        throw ProtocolError{std::string(what) + " of " + std::to_string(*n) + " bytes exceeds the limit of " +
                            std::to_string(limit)};
      if (in.size() - pos < *n) return std::nullopt;
      std::string s = in.substr(pos, *n);
      pos += *n;
      return s;
    }
    std::optional<std::vector<std::string>> keys() {
      const auto n = u64();
      if (!n) return std::nullopt;
      if (*n == 0 || *n > detail::kMaxKeysPerRequest)
        throw ProtocolError{"a key count of " + std::to_string(*n) + " (allowed: 1 to " +
                            std::to_string(detail::kMaxKeysPerRequest) + ")"};
      std::vector<std::string> out;
      for (std::uint64_t i = 0; i < *n; ++i) {
        auto k = bytes(detail::kMaxKeyBytes, "a key");
        if (!k) return std::nullopt;
        out.push_back(std::move(*k));
      }
      return out;
    }
  };

  // Executes the first complete message in c.in; returns its length, or nothing when
  // it is not complete yet.
  std::optional<std::size_t> handle(Conn& c) {
    using detail::StoreCommand;
    const auto cmd = static_cast<std::uint8_t>(c.in[0]);
    Reader r{c.in};
    switch (static_cast<StoreCommand>(cmd)) {
      case StoreCommand::set: {
        auto key = r.bytes(detail::kMaxKeyBytes, "a key");
        if (!key) return std::nullopt;
        auto value = r.bytes(detail::kMaxValueBytes, "a value");
        if (!value) return std::nullopt;
        put(*key, std::move(*value));
        return r.pos;
      }
      case StoreCommand::get: {
        auto key = r.bytes(detail::kMaxKeyBytes, "a key");
        if (!key) return std::nullopt;
        auto it = data_.find(*key);
        if (it == data_.end()) throw ProtocolError{"GET of a key that does not exist"};
        detail::append_bytes(c.out, it->second);
        return r.pos;
      }
      case StoreCommand::add: {
        auto key = r.bytes(detail::kMaxKeyBytes, "a key");
        if (!key) return std::nullopt;
        auto delta = r.u64();
        if (!delta) return std::nullopt;
        std::int64_t sum = static_cast<std::int64_t>(*delta);
        if (auto it = data_.find(*key); it != data_.end()) {
          std::int64_t old = 0;
          try {
            std::size_t used = 0;
            old = std::stoll(it->second, &used);
            if (used != it->second.size()) throw std::invalid_argument("trailing bytes");
          } catch (const std::exception&) {
            throw ProtocolError{"ADD to a key whose value is not a decimal integer"};
          }
          sum = static_cast<std::int64_t>(static_cast<std::uint64_t>(sum) + static_cast<std::uint64_t>(old));
        }
        detail::append_i64(c.out, sum);
        put(*key, std::to_string(sum));
        return r.pos;
      }
      case StoreCommand::check: {
        auto keys = r.keys();
        if (!keys) return std::nullopt;
        bool all = true;
        for (const auto& k : *keys) all = all && data_.count(k) != 0;
        c.out.push_back(static_cast<char>(all ? detail::kCheckReady : detail::kCheckNotReady));
        return r.pos;
      }
      case StoreCommand::wait: {
        auto keys = r.keys();
        if (!keys) return std::nullopt;
        if (c.awaiting != 0) throw ProtocolError{"a second WAIT before the first was answered"};
        for (const auto& k : *keys)
          if (data_.count(k) == 0) {
            waiting_[k].push_back(c.fd.get());
            ++c.awaiting;
          }
        if (c.awaiting == 0) c.out.push_back(static_cast<char>(detail::kWaitDone));
        return r.pos;
      }
      default:
        throw ProtocolError{"unknown or unsupported command byte " + std::to_string(cmd)};
    }
  }

  void put(const std::string& key, std::string value) {
    auto it = data_.find(key);
    const std::size_t old = it == data_.end() ? 0 : it->second.size() + key.size();
    if (bytes_ - old + value.size() + key.size() > kMaxStoreBytes)
      throw ProtocolError{"the store would exceed " + std::to_string(kMaxStoreBytes) + " bytes"};
    bytes_ = bytes_ - old + value.size() + key.size();
    data_[key] = std::move(value);
    if (auto w = waiting_.find(key); w != waiting_.end()) {
      for (const int fd : w->second)
        if (Conn* waiter = find_conn(fd); waiter && --waiter->awaiting == 0)
          waiter->out.push_back(static_cast<char>(detail::kWaitDone));
      waiting_.erase(w);
    }
  }

  static constexpr std::size_t kMaxStoreBytes = 1ull << 30;

  TCPStoreServerOptions opts_;
  detail::Fd listen_, wake_read_, wake_write_;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<std::int64_t> dropped_{0};
  std::vector<Conn> conns_;
  std::unordered_map<std::string, std::string> data_;
  std::unordered_map<std::string, std::vector<int>> waiting_;
  std::size_t bytes_ = 0;
  std::thread thread_;
};

}  // namespace tinynet::dist
