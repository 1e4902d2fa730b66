#pragma once
/// \file
/// Exceptions of the file formats. Every message names the file (or "<memory>") and
/// the problem.

#include <string_view>
#include <utility>

#include "tinynet/core/error.hpp"

namespace tinynet {

// FileError (the OS refused) and FormatError (not a valid tinynet file: wrong magic,
// unknown version or kind, truncated, checksum mismatch, malformed entry) are in
// core/error.hpp, shared with the data layer.

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
