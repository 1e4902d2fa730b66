#pragma once
/// \file
/// Exceptions of the file formats. Every message names the file (or "<memory>") and
/// the problem.

#include <string_view>
#include <utility>

#include "tinynet/core/error.hpp"

namespace tinynet {

/// The operating system refused: open, read, write, fsync or rename failed.
/// The message holds the path and strerror's text.
class FileError : public Error {
 public:
  using Error::Error;
};

/// The bytes are not a valid tinynet file: wrong magic, unknown version or kind,
/// truncated, checksum mismatch, or a malformed entry (size, rank, dtype, name).
class FormatError : public Error {
 public:
  using Error::Error;
};

/// A file's entries do not fit the object loading them: a missing or unexpected entry,
/// or a shape or dtype mismatch. The message lists every problem, each naming its tensor.
class StateDictError : public Error {
 public:
  using Error::Error;
};

namespace io::detail {

/// Throws FormatError "<source>: <parts...>".
template <typename... Parts>
[[noreturn]] void fail_format(std::string_view source, Parts&&... parts) {
  throw FormatError(tinynet::detail::concat(source, ": ", std::forward<Parts>(parts)...));
}

}  // namespace io::detail
}  // namespace tinynet
