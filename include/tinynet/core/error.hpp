#pragma once
/// \file
/// Exception types. Every run-time misuse throws one of these with a message
/// naming the operation, what it expected and what it got.

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace tinynet {

/// Base of all tinynet errors.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
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
