#pragma once
/// \file
/// TCPStore: a client of a TCP key-value store, tinynet's own (TCPStoreServer) or the
/// one torchrun's agent hosts (PyTorch 1.13's c10d TCPStore; see
/// detail/store_protocol.hpp). One connection, used by one request at a time.

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

  /// Connects to host:port, retrying until `timeout` while nothing listens there yet.
  /// `who` ("rank 1") starts every error message.
  TCPStore(std::string host, int port, Milliseconds timeout, std::string who = "store client")
      : Store(timeout), host_(std::move(host)), port_(port), who_(std::move(who)) {
    fd_ = detail::connect_with_retry(host_, port_, detail::Clock::now() + timeout, context("connecting to the store"));
  }

  void set(const std::string& key, const std::string& value) override {
    std::lock_guard lock(mu_);
    std::string msg(1, static_cast<char>(detail::StoreCommand::set));
    detail::append_bytes(msg, key);
    detail::append_bytes(msg, value);
    send(msg, "set('" + key + "')");
  }

  std::string get(const std::string& key, Milliseconds timeout) override {
    std::lock_guard lock(mu_);
    wait_locked({key}, timeout);
    std::string msg(1, static_cast<char>(detail::StoreCommand::get));
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
    std::string msg(1, static_cast<char>(detail::StoreCommand::add));
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
    std::string msg(1, static_cast<char>(detail::StoreCommand::check));
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

  void ensure_open(const std::string& what) {
    if (!fd_.valid())
      fd_ = detail::connect_with_retry(host_, port_, detail::Clock::now() + timeout(), context(what + ": reconnecting"));
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
    guarded([&] { detail::send_all(fd_.get(), msg.data(), msg.size(), detail::Clock::now() + timeout(), context(what)); });
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
    std::string msg(1, static_cast<char>(detail::StoreCommand::wait));
    append_keys(msg, keys);
    std::string what = "wait for";
    for (std::size_t i = 0; i < keys.size() && i < 4; ++i) what += " '" + keys[i] + "'";
    if (keys.size() > 4) what += " and " + std::to_string(keys.size() - 4) + " more keys";
    send(msg, what);
    std::uint8_t reply = 0;
    try {
      recv(&reply, 1, what, detail::Clock::now() + timeout);
    } catch (const DistTimeoutError&) {
      throw DistTimeoutError(context(what) + ": not set within " + std::to_string(timeout.count()) + " ms");
    }
    if (reply != detail::kWaitDone) fail(what + ": unexpected reply byte " + std::to_string(reply));
  }

  std::string host_;
  int port_;
  std::string who_;
  std::mutex mu_;
  detail::Fd fd_;
};

}  // namespace tinynet::dist
