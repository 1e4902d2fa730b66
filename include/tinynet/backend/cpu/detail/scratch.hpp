#pragma once
/// \file
/// Floats for the length of one kernel call, from the CPU caching allocator: a training
/// step asks for the same sizes every batch, so after the first one nothing reaches the
/// system (for kernels whose scratch the op does not allocate itself).

#include <cstddef>
#include <cstdint>

#include "tinynet/core/allocator.hpp"

namespace tinynet::backend::cpu {

class ScratchFloats {
 public:
  explicit ScratchFloats(std::int64_t n)
      : bytes_(static_cast<std::size_t>(n > 0 ? n : 1) * sizeof(float)),
        data_(static_cast<float*>(cpu_allocator().allocate(bytes_))) {}
  ~ScratchFloats() { cpu_allocator().deallocate(data_, bytes_); }
  ScratchFloats(const ScratchFloats&) = delete;
  ScratchFloats& operator=(const ScratchFloats&) = delete;
  float* data() const { return data_; }

 private:
  std::size_t bytes_;
  float* data_;
};

}  // namespace tinynet::backend::cpu
