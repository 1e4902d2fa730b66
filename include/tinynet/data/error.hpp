#pragma once
/// \file
/// Exception types of the data layer. Each message starts with the file (or data set)
/// concerned and says what is wrong with it, so a user can act without a debugger.

#include "tinynet/core/error.hpp"

namespace tinynet::data {

// FileError and FormatError (core/error.hpp) report a missing, unreadable or malformed
// file; these two are the data layer's own.
using tinynet::FileError;
using tinynet::FormatError;

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
