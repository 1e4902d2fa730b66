// A helper for the tests of kernels that write into scratch or padding.
#pragma once

#include <tinynet/core/storage.hpp>

namespace tinynet::testing {

/// New tensors start as NaN (set_fill_uninitialized_memory) while it lives: a kernel that
/// reads scratch it never wrote, an operand's padding say, turns its results into NaN
/// instead of reading what an earlier allocation left there (often zeros, which hide it).
struct FillUninitialized {
  bool saved = fill_uninitialized_memory();
  FillUninitialized() { set_fill_uninitialized_memory(true); }
  ~FillUninitialized() { set_fill_uninitialized_memory(saved); }
  FillUninitialized(const FillUninitialized&) = delete;
  FillUninitialized& operator=(const FillUninitialized&) = delete;
};

}  // namespace tinynet::testing
