#pragma once
/// \file
/// Blocking-with-deadline TCP helpers over POSIX sockets, for the store client and
/// server. Every wait is bounded by a deadline; nothing here can block forever.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

#include "tinynet/dist/error.hpp"

namespace tinynet::dist::detail {

using Clock = std::chrono::steady_clock;

/// Owns a file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

inline std::string errno_text(int err) { return std::strerror(err); }

inline int millis_until(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

inline void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

/// "host:port" of a socket address, for log lines.
inline std::string address_text(const sockaddr* sa) {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
  } else if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    port = ntohs(in6->sin6_port);
  }
  std::string h = host;
  if (h.starts_with("::ffff:") && h.find('.') != std::string::npos) h = h.substr(7);  // IPv4 on a dual-stack socket
  return h + ":" + std::to_string(port);
}

/// Connects to host:port, retrying refused or unreachable attempts until `deadline`
/// (the peer may not be listening yet). Throws DistTimeoutError with the last reason.
inline Fd connect_with_retry(const std::string& host, int port, Clock::time_point deadline, const std::string& what) {
  std::string last = "no attempt made";
  while (true) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
    if (rc != 0) {
      last = std::string("cannot resolve '") + host + "': " + ::gai_strerror(rc);
    } else {
      for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
        Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
        if (!fd.valid()) continue;
        set_nonblocking(fd.get());
        int err = 0;
        if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
          err = errno;
          if (err == EINPROGRESS) {
            pollfd p{fd.get(), POLLOUT, 0};
            const int n = ::poll(&p, 1, std::max(1, std::min(millis_until(deadline), 2000)));
            socklen_t len = sizeof err;
            if (n == 1)
              ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
            else
              err = ETIMEDOUT;
          }
        }
        if (err == 0) {
          const int one = 1;
          ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          ::freeaddrinfo(res);
          return fd;
        }
        last = errno_text(err);
      }
      ::freeaddrinfo(res);
    }
    if (Clock::now() >= deadline)
      throw DistTimeoutError(what + ": could not connect to " + host + ":" + std::to_string(port) +
                             " before the timeout (last error: " + last + ")");
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(100, millis_until(deadline) + 1)));
  }
}

/// Sends all `n` bytes before `deadline`.
inline void send_all(int fd, const void* data, std::size_t n, Clock::time_point deadline, const std::string& what) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k > 0) {
      p += k;
      n -= static_cast<std::size_t>(k);
      continue;
    }
    if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      throw DistError(what + ": send failed: " + errno_text(errno));
    pollfd pf{fd, POLLOUT, 0};
    if (::poll(&pf, 1, millis_until(deadline)) == 0) throw DistTimeoutError(what + ": send timed out");
  }
}

/// Receives exactly `n` bytes before `deadline`.
inline void recv_all(int fd, void* data, std::size_t n, Clock::time_point deadline, const std::string& what) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t k = ::recv(fd, p, n, 0);
    if (k > 0) {
      p += k;
      n -= static_cast<std::size_t>(k);
      continue;
    }
    if (k == 0) throw DistError(what + ": connection closed by the other side");
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      throw DistError(what + ": receive failed: " + errno_text(errno));
    pollfd pf{fd, POLLIN, 0};
    if (::poll(&pf, 1, millis_until(deadline)) == 0) throw DistTimeoutError(what + ": timed out waiting for a reply");
  }
}

/// The local IP address this host uses to reach `host` (no packet is sent: a UDP
/// "connect" only picks the route). That interface is the one peers can reach us on.
inline std::string local_address_toward(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), "9", &hints, &res) != 0) return {};
  std::string out;
  for (addrinfo* ai = res; ai != nullptr && out.empty(); ai = ai->ai_next) {
    Fd fd(::socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!fd.valid() || ::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) continue;
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len) != 0) continue;
    char buf[INET6_ADDRSTRLEN] = {};
    const void* a = ss.ss_family == AF_INET
                        ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&ss)->sin_addr)
                        : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr);
    if (::inet_ntop(ss.ss_family, a, buf, sizeof buf) != nullptr) out = buf;
  }
  ::freeaddrinfo(res);
  return out;
}

}  // namespace tinynet::dist::detail
