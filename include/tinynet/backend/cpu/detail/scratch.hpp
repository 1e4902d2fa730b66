#pragma once
/// \file
/// Elements for the length of one kernel call, from the CPU caching allocator: a training
/// step asks for the same sizes every batch, so after the first one nothing reaches the
/// system (for kernels whose scratch the op does not allocate itself). A count of zero, asked
/// for a path not taken, allocates nothing and holds a null pointer. With
/// fill_uninitialized_memory() it starts with all bits set, as new tensors do: a kernel that
/// reads scratch it never wrote then gives NaN, which a test sees.

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tinynet/core/allocator.hpp"
#include "tinynet/core/storage.hpp"

namespace tinynet::backend::cpu {

template <typename T>
class Scratch {
 public:
  explicit Scratch(std::int64_t n)
      : bytes_(static_cast<std::size_t>(n > 0 ? n : 0) * sizeof(T)),
        data_(bytes_ > 0 ? static_cast<T*>(cpu_allocator().allocate(bytes_)) : nullptr) {
    if (data_ != nullptr && fill_uninitialized_memory()) std::memset(data_, 0xFF, bytes_);
  }
  ~Scratch() {
    if (data_ != nullptr) cpu_allocator().deallocate(data_, bytes_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  T* data() const { return data_; }

 private:
  std::size_t bytes_;
  T* data_;
};

using ScratchFloats = Scratch<float>;

}  // namespace tinynet::backend::cpu
