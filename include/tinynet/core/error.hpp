#pragma once
/// \file
/// Exception types. Every run-time misuse throws one of these with a message
/// naming the operation, what it expected and what it got.

#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace tinynet {

/// Base of all tinynet errors. As an error leaves a module's forward, the module adds where
/// it was raised: `... (in Net.fc2 [Linear])` names the model, the member and its type.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message), where_(std::make_shared<Where>()) {
    where_->message = where_->text = message;
  }
  explicit Error(const char* message) : Error(std::string(message)) {}

  const char* what() const noexcept override { return where_->text.c_str(); }

  /// The message as raised, without the module context.
  const std::string& message() const noexcept { return where_->message; }
  /// Dotted path of the module that raised it, as seen from the outermost module it left
  /// ("fc2", "layer1.0.conv1"); empty where it was raised outside a module's child.
  const std::string& module_path() const noexcept { return where_->path; }

  /// Called by a module whose forward this error leaves: `child_name` names (relative to that
  /// module) the module it was last recorded in, empty if unknown; `type` is the module's type.
  void leave_module(const void* module, std::string_view child_name, std::string_view type) {
    Where& w = *where_;
    if (w.innermost_type.empty()) {
      w.innermost_type = type;
    } else if (!w.lost) {
      if (child_name.empty())
        w.lost = true;  // called through something that is not its visited member
      else
        w.path = w.path.empty() ? std::string(child_name) : std::string(child_name) + "." + w.path;
    }
    w.outer_type = type;
    w.module = module;
    if (w.path.empty() && !w.lost)
      w.text = w.message + " (in " + w.innermost_type + ")";
    else
      w.text = w.message + " (in " + (w.lost ? "a child of " : "") + w.outer_type + (w.path.empty() ? "" : ".") +
               w.path + " [" + w.innermost_type + "])";
  }
  /// The module the error was last recorded in (see leave_module).
  const void* last_module() const noexcept { return where_->module; }

 private:
  struct Where {
    std::string message, text, path, innermost_type, outer_type;
    const void* module = nullptr;
    bool lost = false;
  };
  // Shared so that copying an exception cannot throw.
  std::shared_ptr<Where> where_;
};

/// Tensors whose shapes do not fit the operation (mismatched extents, wrong rank, an
/// input smaller than the kernel).
class ShapeError : public Error {
 public:
  using Error::Error;
};

/// An index or dimension outside its valid range.
class IndexError : public Error {
 public:
  using Error::Error;
};

/// An argument value the operation cannot accept (stride 0, negative padding, p outside [0, 1], ...).
class ValueError : public Error {
 public:
  using Error::Error;
};

/// A file the operating system would not open, read, write, fsync or rename; the message
/// holds the path and the system's reason.
class FileError : public Error {
 public:
  using Error::Error;
};

/// A file whose bytes are not what they claim to be (bad magic, truncated, oversized,
/// corrupt, malformed); the message names the file and what is wrong.
class FormatError : public Error {
 public:
  using Error::Error;
};

/// Tensors with an unsupported or mismatched dtype or device.
class TypeError : public Error {
 public:
  using Error::Error;
};

namespace detail {

template <typename... Args>
std::string concat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

}  // namespace detail

}  // namespace tinynet

/// Throws exception type `E` (a tinynet::Error subtype) with the streamed message
/// arguments when `cond` is false. The message is only built on failure, so checks on
/// hot paths cost one branch.
#define TINYNET_CHECK(E, cond, ...)                    \
  do {                                                 \
    if (!(cond)) [[unlikely]]                          \
      throw E(::tinynet::detail::concat(__VA_ARGS__)); \
  } while (false)
