#pragma once
/// \file
/// StoreEngine: the TCP store's keys and values and its request handling, without sockets.
/// TCPStoreServer feeds it each connection's bytes and sends back what it queues; the
/// fuzz target (tests/dist/fuzz_store.cpp) feeds it arbitrary bytes the same way.
///
/// Each connection's dialect (store_protocol.hpp) is read from its first bytes. Every
/// length is checked against the bounds there before anything is allocated; a request
/// that breaks a rule throws StoreProtocolError, and the caller drops that connection.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tinynet/dist/detail/store_protocol.hpp"

namespace tinynet::dist::detail {

/// A connection broke the protocol; `reason` says how (for the server's log).
struct StoreProtocolError {
  std::string reason;
};

class StoreEngine {
 public:
  using ConnId = int;

  /// Starts serving connection `id`.
  void open(ConnId id) { connections_[id] = Connection{}; }

  /// Forgets connection `id` and any WAIT it has pending.
  void close(ConnId id) {
    forget_waits(id);
    connections_.erase(id);
  }

  /// Executes every complete request at the front of `in` and erases it; an incomplete
  /// one stays for the next call. Replies, and those owed to other connections whose WAIT
  /// this completes, are queued in output(). Throws StoreProtocolError.
  void feed(ConnId id, std::string& in) {
    Connection& s = connections_.at(id);
    while (!in.empty()) {
      const std::optional<std::size_t> used = handle(id, s, in);
      if (!used) break;
      in.erase(0, *used);
    }
  }

  /// Bytes queued for connection `id`; the caller sends and erases them.
  std::string& output(ConnId id) { return connections_.at(id).out; }
  /// The dialect of connection `id`, once its first bytes have shown it.
  std::optional<Protocol> protocol(ConnId id) const { return connections_.at(id).protocol; }
  /// Keys and values held, in bytes (bounded by kMaxStoreBytes).
  std::size_t bytes() const { return bytes_; }

  static constexpr std::size_t kMaxStoreBytes = 1ull << 30;

 private:
  struct Connection {
    std::optional<Protocol> protocol;
    std::string out;
    std::size_t awaiting = 0;  // keys of a pending WAIT not yet set
  };

  // A cursor over a connection's input; running out means "wait for more bytes".
  struct Reader {
    std::string_view in;
    std::size_t pos = 1;  // after the command byte
    std::optional<std::uint64_t> u64() {
      if (in.size() - pos < 8) return std::nullopt;
      std::uint64_t v;
      std::memcpy(&v, in.data() + pos, 8);
      pos += 8;
      return v;
    }
    std::optional<std::uint32_t> u32() {
      if (in.size() - pos < 4) return std::nullopt;
      std::uint32_t v;
      std::memcpy(&v, in.data() + pos, 4);
      pos += 4;
      return v;
    }
    std::optional<std::string> bytes(std::uint64_t limit, const char* what) {
      const auto n = u64();
      if (!n) return std::nullopt;
      if (*n > limit)
        throw StoreProtocolError{std::string(what) + " of " + std::to_string(*n) + " bytes exceeds the limit of " +
                                 std::to_string(limit)};
      if (in.size() - pos < *n) return std::nullopt;
      std::string s(in.substr(pos, *n));
      pos += *n;
      return s;
    }
    std::optional<std::string> key() { return bytes(kMaxKeyBytes, "a key"); }
    std::optional<std::string> value() { return bytes(kMaxValueBytes, "a value"); }
    std::optional<std::uint64_t> count() {
      const auto n = u64();
      if (n && *n > kMaxKeysPerRequest)
        throw StoreProtocolError{"a key count of " + std::to_string(*n) + " (allowed: 0 to " +
                                 std::to_string(kMaxKeysPerRequest) + ")"};
      return n;
    }
    std::optional<std::vector<std::string>> keys() {
      const auto n = count();
      if (!n) return std::nullopt;
      std::vector<std::string> out;
      for (std::uint64_t i = 0; i < *n; ++i) {
        auto k = key();
        if (!k) return std::nullopt;
        out.push_back(std::move(*k));
      }
      return out;
    }
  };

  // Executes the first complete request in `in`; returns its length, or nothing when it
  // is not complete yet.
  std::optional<std::size_t> handle(ConnId id, Connection& s, const std::string& in) {
    if (!s.protocol) {
      // 2.x opens with VALIDATE + magic; anything else is a 1.13 client's first request.
      const std::size_t n = std::min(in.size(), kValidateBytes.size());
      if (std::memcmp(in.data(), kValidateBytes.data(), n) == 0) {
        if (n < kValidateBytes.size()) return std::nullopt;
        s.protocol = Protocol::torch2;
        return kValidateBytes.size();
      }
      s.protocol = Protocol::torch113;
    }
    const auto code = static_cast<std::uint8_t>(in[0]);
    const std::optional<StoreCommand> cmd = decode_command(*s.protocol, code);
    if (!cmd)
      throw StoreProtocolError{"unknown or unsupported command byte " + std::to_string(code) + " (" +
                               protocol_name(*s.protocol) + ")"};
    Reader r{in};
    switch (*cmd) {
      case StoreCommand::validate:
        throw StoreProtocolError{"VALIDATE after the connection's first request"};
      case StoreCommand::set: {
        auto key = r.key();
        if (!key) return std::nullopt;
        auto value = r.value();
        if (!value) return std::nullopt;
        put(*key, std::move(*value));
        return r.pos;
      }
      case StoreCommand::compare_set: {
        auto key = r.key();
        if (!key) return std::nullopt;
        auto expected = r.value();
        if (!expected) return std::nullopt;
        auto desired = r.value();
        if (!desired) return std::nullopt;
        // PyTorch's rule: an absent key is created only when `expected` is empty; the
        // reply is the value the key holds afterwards (or `expected` when still absent).
        auto it = data_.find(*key);
        if (it == data_.end()) {
          append_bytes(s.out, expected->empty() ? *desired : *expected);
          if (expected->empty()) put(*key, std::move(*desired));
        } else {
          if (it->second == *expected) put(*key, std::move(*desired));
          append_bytes(s.out, data_.at(*key));
        }
        return r.pos;
      }
      case StoreCommand::get: {
        auto key = r.key();
        if (!key) return std::nullopt;
        append_bytes(s.out, existing(*key, "GET"));
        return r.pos;
      }
      case StoreCommand::add: {
        auto key = r.key();
        if (!key) return std::nullopt;
        auto delta = r.u64();
        if (!delta) return std::nullopt;
        std::uint64_t sum = *delta;  // wraps like the int64 arithmetic of PyTorch's server
        if (auto it = data_.find(*key); it != data_.end()) sum += static_cast<std::uint64_t>(integer_value(it->second));
        const auto result = static_cast<std::int64_t>(sum);
        append_i64(s.out, result);
        put(*key, std::to_string(result));
        return r.pos;
      }
      case StoreCommand::check: {
        auto keys = r.keys();
        if (!keys) return std::nullopt;
        const bool all = std::all_of(keys->begin(), keys->end(), [&](const auto& k) { return data_.count(k) != 0; });
        s.out.push_back(static_cast<char>(all ? kCheckReady : kCheckNotReady));
        return r.pos;
      }
      case StoreCommand::wait: {
        auto keys = r.keys();
        if (!keys) return std::nullopt;
        if (s.awaiting != 0) throw StoreProtocolError{"a second WAIT before the first was answered"};
        for (const auto& k : *keys)
          if (data_.count(k) == 0) {
            waiting_[k].push_back(id);
            ++s.awaiting;
          }
        if (s.awaiting == 0) s.out.push_back(static_cast<char>(kWaitDone));
        return r.pos;
      }
      case StoreCommand::get_num_keys:
        append_i64(s.out, static_cast<std::int64_t>(data_.size()));
        return 1;
      case StoreCommand::delete_key: {
        auto key = r.key();
        if (!key) return std::nullopt;
        std::int64_t deleted = 0;
        if (auto it = data_.find(*key); it != data_.end()) {
          bytes_ -= it->first.size() + it->second.size();
          data_.erase(it);
          deleted = 1;
        }
        append_i64(s.out, deleted);
        return r.pos;
      }
      case StoreCommand::append: {
        auto key = r.key();
        if (!key) return std::nullopt;
        auto value = r.value();
        if (!value) return std::nullopt;
        auto it = data_.find(*key);
        std::string joined = it == data_.end() ? std::string() : it->second;
        if (joined.size() + value->size() > kMaxValueBytes)
          throw StoreProtocolError{"APPEND would make a value of " + std::to_string(joined.size() + value->size()) +
                                   " bytes, over the limit of " + std::to_string(kMaxValueBytes)};
        put(*key, joined + *value);
        return r.pos;
      }
      case StoreCommand::multi_get: {
        auto keys = r.keys();
        if (!keys) return std::nullopt;
        std::string reply;
        for (const auto& k : *keys) append_bytes(reply, existing(k, "MULTI_GET"));
        s.out += reply;
        return r.pos;
      }
      case StoreCommand::multi_set: {
        const auto n = r.count();
        if (!n) return std::nullopt;
        std::vector<std::pair<std::string, std::string>> pairs;  // all parsed before any is set
        for (std::uint64_t i = 0; i < *n; ++i) {
          auto key = r.key();
          if (!key) return std::nullopt;
          auto value = r.value();
          if (!value) return std::nullopt;
          pairs.emplace_back(std::move(*key), std::move(*value));
        }
        for (auto& [k, v] : pairs) put(k, std::move(v));
        return r.pos;
      }
      case StoreCommand::cancel_wait:
        forget_waits(id);
        s.awaiting = 0;
        s.out.push_back(static_cast<char>(kWaitCanceled));
        return 1;
      case StoreCommand::ping: {
        const auto nonce = r.u32();
        if (!nonce) return std::nullopt;
        append_u32(s.out, *nonce);
        return r.pos;
      }
    }
    throw StoreProtocolError{"unhandled command byte " + std::to_string(code)};
  }

  // PyTorch's server closes the connection on a GET of a missing key (clients WAIT first).
  const std::string& existing(const std::string& key, const char* op) const {
    auto it = data_.find(key);
    if (it == data_.end()) throw StoreProtocolError{std::string(op) + " of a key that does not exist"};
    return it->second;
  }

  static std::int64_t integer_value(const std::string& text) {
    try {
      std::size_t used = 0;
      const std::int64_t v = std::stoll(text, &used);
      if (used == text.size()) return v;
    } catch (const std::exception&) {
    }
    throw StoreProtocolError{"ADD to a key whose value is not a decimal integer"};
  }

  void put(const std::string& key, std::string value) {
    auto it = data_.find(key);
    const std::size_t old = it == data_.end() ? 0 : it->second.size() + key.size();
    if (bytes_ - old + value.size() + key.size() > kMaxStoreBytes)
      throw StoreProtocolError{"the store would exceed " + std::to_string(kMaxStoreBytes) + " bytes"};
    bytes_ = bytes_ - old + value.size() + key.size();
    data_[key] = std::move(value);
    if (auto w = waiting_.find(key); w != waiting_.end()) {
      for (const ConnId waiter : w->second)
        if (auto s = connections_.find(waiter); s != connections_.end() && --s->second.awaiting == 0)
          s->second.out.push_back(static_cast<char>(kWaitDone));
      waiting_.erase(w);
    }
  }

  void forget_waits(ConnId id) {
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      std::erase(it->second, id);
      it = it->second.empty() ? waiting_.erase(it) : std::next(it);
    }
  }

  std::unordered_map<ConnId, Connection> connections_;
  std::unordered_map<std::string, std::string> data_;
  std::unordered_map<std::string, std::vector<ConnId>> waiting_;
  std::size_t bytes_ = 0;
};

}  // namespace tinynet::dist::detail
