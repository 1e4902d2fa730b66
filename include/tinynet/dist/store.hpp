#pragma once
/// \file
/// Store: the key-value store ranks meet through before they can talk to each other
/// (torch.distributed.Store). Values are byte strings. `get` blocks until the key exists;
/// every blocking call is bounded by a timeout and throws DistTimeoutError past it.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tinynet/dist/error.hpp"

namespace tinynet::dist {

using Milliseconds = std::chrono::milliseconds;

class Store {
 public:
  virtual ~Store() = default;
  /// Sets `key` to `value`, overwriting, and wakes everyone waiting for it.
  virtual void set(const std::string& key, const std::string& value) = 0;
  /// The value of `key`, waiting up to `timeout` for it to be set.
  virtual std::string get(const std::string& key, Milliseconds timeout) = 0;
  /// Adds `delta` to the decimal integer held by `key` (0 when absent); returns the sum.
  virtual std::int64_t add(const std::string& key, std::int64_t delta) = 0;
  /// Waits until every key exists; DistTimeoutError after `timeout`.
  virtual void wait(const std::vector<std::string>& keys, Milliseconds timeout) = 0;
  /// Whether every key exists now (no waiting).
  virtual bool check(const std::vector<std::string>& keys) = 0;

  std::string get(const std::string& key) { return get(key, timeout()); }
  void wait(const std::vector<std::string>& keys) { wait(keys, timeout()); }
  Milliseconds timeout() const { return timeout_; }
  void set_timeout(Milliseconds t) { timeout_ = t; }

 protected:
  explicit Store(Milliseconds timeout) : timeout_(timeout) {}

 private:
  Milliseconds timeout_;
};

/// A view of another store with every key put under "prefix/" (torch's PrefixStore):
/// runs, attempts and subsystems each get their own key space.
class PrefixStore : public Store {
 public:
  using Store::get;
  using Store::wait;
  PrefixStore(std::string prefix, std::shared_ptr<Store> base)
      : Store(base->timeout()), prefix_(std::move(prefix)), base_(std::move(base)) {}
  void set(const std::string& key, const std::string& value) override { base_->set(join(key), value); }
  std::string get(const std::string& key, Milliseconds timeout) override { return base_->get(join(key), timeout); }
  std::int64_t add(const std::string& key, std::int64_t delta) override { return base_->add(join(key), delta); }
  void wait(const std::vector<std::string>& keys, Milliseconds timeout) override { base_->wait(join(keys), timeout); }
  bool check(const std::vector<std::string>& keys) override { return base_->check(join(keys)); }
  const std::string& prefix() const { return prefix_; }
  const std::shared_ptr<Store>& base() const { return base_; }

 private:
  std::string join(const std::string& key) const { return prefix_ + "/" + key; }
  std::vector<std::string> join(const std::vector<std::string>& keys) const {
    std::vector<std::string> out;
    out.reserve(keys.size());
    for (const auto& k : keys) out.push_back(join(k));
    return out;
  }

  std::string prefix_;
  std::shared_ptr<Store> base_;
};

}  // namespace tinynet::dist
