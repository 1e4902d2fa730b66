#pragma once
/// \file
/// FileStore: the store on a shared filesystem that `file://path` names, every rank
/// pointing at the same directory. Keys are Gloo's FileStore files
/// (gloo/rendezvous/file_store.h), so they are write-once: a key set twice (a directory
/// left over from an earlier run) is an error, which is how a stale store is detected.
/// `add` keeps its counter in a file of its own under an flock.

#include <gloo/rendezvous/file_store.h>
#include <sys/file.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "tinynet/dist/detail/socket.hpp"
#include "tinynet/dist/store.hpp"

namespace tinynet::dist {

namespace detail {
/// Gloo's FileStore with its (protected) non-blocking check made callable.
struct GlooFileStore : gloo::rendezvous::FileStore {
  using gloo::rendezvous::FileStore::check;
  using gloo::rendezvous::FileStore::FileStore;
};
}  // namespace detail

class FileStore : public Store {
 public:
  using Store::get;
  using Store::wait;

  /// Uses (and creates) directory `path`.
  FileStore(const std::string& path, Milliseconds timeout) : Store(timeout), path_(path) {
    std::error_code ec;
    std::filesystem::create_directories(path_, ec);
    TINYNET_CHECK(DistConfigError, std::filesystem::is_directory(path_), "file:// store: cannot create directory '",
                  path_, "'", ec ? ": " + ec.message() : std::string());
    store_ = std::make_unique<detail::GlooFileStore>(path_);
  }

  void set(const std::string& key, const std::string& value) override {
    // Gloo refuses to read back an empty value; a marker byte keeps "" storable.
    const std::string marked = "v" + value;
    const std::vector<char> v(marked.begin(), marked.end());
    try {
      store_->set(key, v);
    } catch (const std::exception& e) {
      throw DistConfigError("file:// store '" + path_ + "': cannot set '" + key + "' (" + e.what() +
                            "); a directory left by an earlier run must not be reused: give each run a fresh path");
    }
  }

  std::string get(const std::string& key, Milliseconds timeout) override {
    wait({key}, timeout);
    const std::vector<char> v = store_->get(key);
    return std::string(v.begin() + 1, v.end());
  }

  std::int64_t add(const std::string& key, std::int64_t delta) override {
    const std::string file = path_ + "/add." + std::to_string(std::hash<std::string>{}(key));
    detail::Fd fd(::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    TINYNET_CHECK(DistError, fd.valid(), "file:// store: cannot open '", file, "': ", detail::errno_text(errno));
    TINYNET_CHECK(DistError, ::flock(fd.get(), LOCK_EX) == 0, "file:// store: cannot lock '", file, "'");
    char buf[32] = {};
    const ssize_t n = ::pread(fd.get(), buf, sizeof buf - 1, 0);
    const std::int64_t sum = (n > 0 ? std::stoll(std::string(buf, static_cast<std::size_t>(n))) : 0) + delta;
    const std::string text = std::to_string(sum);
    TINYNET_CHECK(DistError,
                  ::ftruncate(fd.get(), 0) == 0 &&
                      ::pwrite(fd.get(), text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()),
                  "file:// store: cannot write '", file, "'");
    return sum;  // closing the descriptor releases the lock
  }

  void wait(const std::vector<std::string>& keys, Milliseconds timeout) override {
    try {
      store_->wait(keys, timeout);
    } catch (const std::exception& e) {
      throw DistTimeoutError("file:// store '" + path_ + "': waiting for " + std::to_string(keys.size()) +
                             " key(s), first '" + keys.front() + "': " + e.what());
    }
  }

  bool check(const std::vector<std::string>& keys) override { return store_->check(keys); }

 private:
  std::string path_;
  std::unique_ptr<detail::GlooFileStore> store_;
};

}  // namespace tinynet::dist
