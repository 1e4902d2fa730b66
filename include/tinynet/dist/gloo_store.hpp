#pragma once
/// \file
/// GlooStore: a tinynet Store seen as the gloo::rendezvous::Store that Gloo's
/// Context::connectFullMesh bootstraps from. That call `get`s peers' keys without
/// waiting first, so `get` here blocks (up to the store's timeout), as Store::get does.

#include <gloo/rendezvous/store.h>

#include <memory>
#include <string>
#include <vector>

#include "tinynet/dist/store.hpp"

namespace tinynet::dist {

class GlooStore : public gloo::rendezvous::Store {
 public:
  explicit GlooStore(std::shared_ptr<dist::Store> store) : store_(std::move(store)) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    store_->set(key, std::string(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    const std::string v = store_->get(key);
    return {v.begin(), v.end()};
  }
  void wait(const std::vector<std::string>& keys) override { store_->wait(keys); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    store_->wait(keys, timeout);
  }

 private:
  std::shared_ptr<dist::Store> store_;
};

}  // namespace tinynet::dist
