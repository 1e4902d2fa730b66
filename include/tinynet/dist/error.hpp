#pragma once
/// \file
/// Exceptions of the distributed layer. Messages name the operation, this process's rank
/// and, where known, the peer. Two families, because a launcher must tell them apart:
/// DistError (a peer lost, a connection refused, a timeout: restarting may succeed) and
/// DistConfigError (bad environment, ranks that disagree: restarting cannot help).

#include "tinynet/core/error.hpp"

namespace tinynet::dist {

/// A peer or the store was lost, refused a connection, or a collective failed.
class DistError : public Error {
 public:
  using Error::Error;
};

/// An operation did not complete within its timeout (a wedged or missing peer).
class DistTimeoutError : public DistError {
 public:
  using DistError::DistError;
};

/// The job is set up wrong: a missing or malformed environment variable, ranks that
/// disagree on WORLD_SIZE or on the model, a duplicate RANK, a stale file store.
class DistConfigError : public ValueError {
 public:
  using ValueError::ValueError;
};

}  // namespace tinynet::dist
