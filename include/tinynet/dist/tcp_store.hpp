#pragma once
/// \file
/// TCPStore: a client of a TCP key-value store, tinynet's own (TCPStoreServer) or the
/// one torchrun's agent hosts (PyTorch's c10d TCPStore). It speaks PyTorch 2.x's dialect
/// of the protocol or 1.13's, whichever the server answers on the first connection
/// (detail/store_protocol.hpp); nothing to configure. One connection, used by one request
/// at a time.

#include <unistd.h>

#include <mutex>
#include <string>
#include <vector>

#include "tinynet/dist/detail/socket.hpp"
#include "tinynet/dist/detail/store_protocol.hpp"
#include "tinynet/dist/store.hpp"

namespace tinynet::dist {

class TCPStore : public Store {
 public:
  using Store::get;
  using Store::wait;

  /// Connects to host:port, retrying until `timeout` while nothing listens there yet, and
  /// settles the dialect with the server. `who` ("rank 1") starts every error message.
  TCPStore(std::string host, int port, Milliseconds timeout, std::string who = "store client")
      : Store(timeout), host_(std::move(host)), port_(port), who_(std::move(who)) {
    fd_ = open_connection(detail::Clock::now() + timeout, "connecting to the store");
  }

  /// The dialect the server speaks (PyTorch 1.13's, or 2.x's: torchrun 2.x, tinynet's own).
  detail::Protocol protocol() const { return protocol_; }

  void set(const std::string& key, const std::string& value) override {
    std::lock_guard lock(mu_);
    std::string msg = request(detail::StoreCommand::set);
    detail::append_bytes(msg, key);
    detail::append_bytes(msg, value);
    send(msg, "set('" + key + "')");
  }

  std::string get(const std::string& key, Milliseconds timeout) override {
    std::lock_guard lock(mu_);
    wait_locked({key}, timeout);
    std::string msg = request(detail::StoreCommand::get);
    detail::append_bytes(msg, key);
    const std::string what = "get('" + key + "')";
    send(msg, what);
    const auto n = recv_value<std::uint64_t>(what);
    if (n > detail::kMaxValueBytes) fail(what + ": the store announced a value of " + std::to_string(n) + " bytes");
    std::string value(n, '\0');
    recv(value.data(), n, what);
    return value;
  }

  std::int64_t add(const std::string& key, std::int64_t delta) override {
    std::lock_guard lock(mu_);
    std::string msg = request(detail::StoreCommand::add);
    detail::append_bytes(msg, key);
    detail::append_i64(msg, delta);
    const std::string what = "add('" + key + "')";
    send(msg, what);
    return recv_value<std::int64_t>(what);
  }

  void wait(const std::vector<std::string>& keys, Milliseconds timeout) override {
    std::lock_guard lock(mu_);
    wait_locked(keys, timeout);
  }

  bool check(const std::vector<std::string>& keys) override {
    std::lock_guard lock(mu_);
    std::string msg = request(detail::StoreCommand::check);
    append_keys(msg, keys);
    send(msg, "check");
    const auto reply = recv_value<std::uint8_t>("check");
    if (reply != detail::kCheckReady && reply != detail::kCheckNotReady)
      fail("check: unexpected reply byte " + std::to_string(reply));
    return reply == detail::kCheckReady;
  }

 private:
  std::string context(const std::string& op) const {
    return who_ + ": " + op + " at " + host_ + ":" + std::to_string(port_);
  }

  [[noreturn]] void fail(const std::string& what) {
    fd_.reset();  // see guarded()
    throw DistError(context(what));
  }

  // Connects and, in the 2.x dialect, validates. On the first connection the dialect is
  // not known yet: the 2.x opening (VALIDATE, then a PING) is sent, and a server that
  // closes the connection instead of echoing the PING is a 1.13 one (store_protocol.hpp
  // explains why that opening is safe for it); the client then reconnects speaking 1.13.
  detail::Fd open_connection(detail::Clock::time_point deadline, const std::string& what) {
    detail::Fd fd = detail::connect_with_retry(host_, port_, deadline, context(what));
    if (negotiated_ && protocol_ == detail::Protocol::torch113) return fd;
    // Bit 23 set: a 1.13 server reads a key length >= 2^63 from these bytes (see above).
    const std::uint32_t nonce = 0x00800000u | (static_cast<std::uint32_t>(::getpid()) & 0xFF7FFFFFu);
    std::string hello(detail::kValidateBytes.begin(), detail::kValidateBytes.end());
    hello.push_back(static_cast<char>(*detail::encode_command(detail::Protocol::torch2, detail::StoreCommand::ping)));
    detail::append_u32(hello, nonce);
    const std::string handshake = context(what + ": handshake");
    std::uint32_t echo = 0;
    try {
      detail::send_all(fd.get(), hello.data(), hello.size(), deadline, handshake);
      detail::recv_all(fd.get(), &echo, sizeof echo, deadline, handshake);
    } catch (const DistTimeoutError&) {
      throw;
    } catch (const DistError&) {
      if (negotiated_) throw;
      protocol_ = detail::Protocol::torch113;
      negotiated_ = true;
      return detail::connect_with_retry(host_, port_, deadline, context(what));
    }
    if (echo != nonce)
      throw DistError(handshake + ": the server answered PING with " + std::to_string(echo) + " instead of " +
                      std::to_string(nonce) + "; is it a PyTorch TCPStore?");
    protocol_ = detail::Protocol::torch2;
    negotiated_ = true;
    return fd;
  }

  void ensure_open(const std::string& what) {
    if (!fd_.valid()) fd_ = open_connection(detail::Clock::now() + timeout(), what + ": reconnecting");
  }

  // Every command tinynet sends exists in both dialects.
  std::string request(detail::StoreCommand c) const {
    return std::string(1, static_cast<char>(*detail::encode_command(protocol_, c)));
  }

  // Any failure leaves the byte stream out of step (a reply may still arrive), so the
  // connection is closed and the next request opens a new one instead of reading a
  // stale reply.
  template <class F>
  void guarded(F&& f) {
    try {
      f();
    } catch (const DistError&) {
      fd_.reset();
      throw;
    }
  }

  void send(const std::string& msg, const std::string& what) {
    ensure_open(what);
    guarded(
        [&] { detail::send_all(fd_.get(), msg.data(), msg.size(), detail::Clock::now() + timeout(), context(what)); });
  }

  void recv(void* data, std::size_t n, const std::string& what,
            detail::Clock::time_point deadline = detail::Clock::time_point::max()) {
    if (deadline == detail::Clock::time_point::max()) deadline = detail::Clock::now() + timeout();
    guarded([&] { detail::recv_all(fd_.get(), data, n, deadline, context(what)); });
  }

  template <class T>
  T recv_value(const std::string& what) {
    T v{};
    recv(&v, sizeof v, what);
    return v;
  }

  static void append_keys(std::string& msg, const std::vector<std::string>& keys) {
    detail::append_u64(msg, keys.size());
    for (const auto& k : keys) detail::append_bytes(msg, k);
  }

  void wait_locked(const std::vector<std::string>& keys, Milliseconds timeout) {
    std::string msg = request(detail::StoreCommand::wait);
    append_keys(msg, keys);
    std::string what = "wait for";
    for (std::size_t i = 0; i < keys.size() && i < 4; ++i) what += " '" + keys[i] + "'";
    if (keys.size() > 4) what += " and " + std::to_string(keys.size() - 4) + " more keys";
    send(msg, what);
    std::uint8_t reply = 0;
    try {
      detail::recv_all(fd_.get(), &reply, 1, detail::Clock::now() + timeout, context(what));
    } catch (const DistTimeoutError&) {
      cancel_wait(what);
      throw DistTimeoutError(context(what) + ": not set within " + std::to_string(timeout.count()) + " ms");
    } catch (const DistError&) {
      fd_.reset();
      throw;
    }
    if (reply != detail::kWaitDone) fail(what + ": unexpected reply byte " + std::to_string(reply));
  }

  // A timed-out WAIT is still pending on the server. 2.x can withdraw it (CANCEL_WAIT,
  // answered by WAIT_CANCELED, after the WAIT's own reply if the key came meanwhile) and
  // keep the connection; 1.13 cannot, so the connection is closed, which withdraws it too.
  void cancel_wait(const std::string& what) {
    if (protocol_ != detail::Protocol::torch2) return fd_.reset();
    try {
      const std::string msg = request(detail::StoreCommand::cancel_wait);
      const auto deadline = detail::Clock::now() + timeout();
      detail::send_all(fd_.get(), msg.data(), msg.size(), deadline, context(what + ": cancelling"));
      std::uint8_t reply = 0;
      detail::recv_all(fd_.get(), &reply, 1, deadline, context(what + ": cancelling"));
      if (reply == detail::kWaitDone) detail::recv_all(fd_.get(), &reply, 1, deadline, context(what + ": cancelling"));
      if (reply != detail::kWaitCanceled) fd_.reset();
    } catch (const DistError&) {
      fd_.reset();
    }
  }

  std::string host_;
  int port_;
  std::string who_;
  std::mutex mu_;
  detail::Protocol protocol_ = detail::Protocol::torch2;
  bool negotiated_ = false;
  detail::Fd fd_;
};

}  // namespace tinynet::dist
