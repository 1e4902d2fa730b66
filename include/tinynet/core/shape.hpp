#pragma once
/// \file
/// Shape: the extents of a tensor, held inline (no heap allocation) up to kMaxRank dims.

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <span>
#include <string>

#include "tinynet/core/error.hpp"

namespace tinynet {

/// Extents of an n-d tensor, row-major. Rank 0 is a scalar with one element.
class Shape {
 public:
  static constexpr int kMaxRank = 6;

  constexpr Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims) { assign(dims.begin(), dims.end()); }
  explicit Shape(std::span<const std::int64_t> dims) { assign(dims.begin(), dims.end()); }

  constexpr int rank() const { return rank_; }
  constexpr std::int64_t operator[](int i) const { return dims_[static_cast<std::size_t>(i)]; }
  std::int64_t& operator[](int i) { return dims_[static_cast<std::size_t>(i)]; }

  /// Extent of dim `d`; negative `d` counts from the end. Throws IndexError when out of range.
  std::int64_t size(int d) const { return dims_[static_cast<std::size_t>(wrap_dim(d))]; }

  /// Number of elements (1 for a scalar).
  constexpr std::int64_t numel() const {
    std::int64_t n = 1;
    for (int i = 0; i < rank_; ++i) n *= dims_[static_cast<std::size_t>(i)];
    return n;
  }

  /// Maps a possibly negative dim index into [0, rank).
  int wrap_dim(int d) const {
    const int w = d < 0 ? d + rank_ : d;
    TINYNET_CHECK(IndexError, w >= 0 && w < rank_, "dimension ", d, " out of range for shape ", str());
    return w;
  }

  std::span<const std::int64_t> dims() const { return {dims_.data(), static_cast<std::size_t>(rank_)}; }
  const std::int64_t* begin() const { return dims_.data(); }
  const std::int64_t* end() const { return dims_.data() + rank_; }

  void push_back(std::int64_t d) {
    TINYNET_CHECK(ShapeError, rank_ < kMaxRank, "tensors have at most ", kMaxRank, " dimensions");
    TINYNET_CHECK(ShapeError, d >= 0, "negative extent ", d, " in shape");
    dims_[static_cast<std::size_t>(rank_++)] = d;
  }

  friend bool operator==(const Shape& a, const Shape& b) {
    return a.rank_ == b.rank_ && std::equal(a.begin(), a.end(), b.begin());
  }

  /// "[64, 1, 28, 28]"
  std::string str() const {
    std::string s = "[";
    for (int i = 0; i < rank_; ++i) {
      if (i) s += ", ";
      s += std::to_string(dims_[static_cast<std::size_t>(i)]);
    }
    return s + "]";
  }

 private:
  template <typename It>
  void assign(It first, It last) {
    for (; first != last; ++first) push_back(*first);
  }

  std::array<std::int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

inline std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.str(); }

}  // namespace tinynet
