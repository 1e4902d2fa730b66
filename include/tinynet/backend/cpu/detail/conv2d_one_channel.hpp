#pragma once
/// \file
/// The shape of a direct one-channel convolution and the filter sizes its kernel covers
/// (simd/conv2d_one_channel.inl).

#include <cstdint>

namespace tinynet::backend::cpu::one_channel {

/// A stride-1 convolution of one-channel h x w planes by out_c kh x kw filters.
struct Shape {
  std::int64_t h, w, out_c, kh, kw, ph, pw, oh, ow;
};

/// The kernel covers filters up to 5 columns wide (ColumnMasks holds one mask pair per
/// kernel column).
inline bool supports(std::int64_t kh, std::int64_t kw) { return kh <= 5 && kw <= 5; }

}  // namespace tinynet::backend::cpu::one_channel
