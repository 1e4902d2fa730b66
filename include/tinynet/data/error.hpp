#pragma once
/// \file
/// Exception types of the data layer. Each message starts with the file (or data set)
/// concerned and says what is wrong with it, so a user can act without a debugger.

#include "tinynet/core/error.hpp"

namespace tinynet::data {

/// A file that cannot be found, opened or read.
class FileError : public Error {
 public:
  using Error::Error;
};

/// A file whose content is not what it claims to be: bad IDX magic, wrong element type
/// or rank, truncated or oversized data, corrupt gzip, an HTML page, labels out of range.
class FormatError : public Error {
 public:
  using Error::Error;
};

/// A file whose content does not have the MD5 it must have.
class ChecksumError : public Error {
 public:
  using Error::Error;
};

/// No source could supply a data set's files; the message lists every source tried.
class FetchError : public Error {
 public:
  using Error::Error;
};

}  // namespace tinynet::data
