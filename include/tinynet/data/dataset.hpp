#pragma once
/// \file
/// What a DataLoader needs from a data set, and TensorDataset, the simplest one.
///
/// A data set here is map-style and gathers whole batches at once (like libtorch's
/// `BatchDataset::get_batch`): copying B rows into one new tensor is one pass over
/// memory, where stacking B single-sample tensors would be two plus B allocations.
/// New tensors come from tinynet's caching allocator, so once an epoch has run, later
/// epochs reuse the same blocks and allocate nothing from the system.

#include <concepts>
#include <cstdint>
#include <cstring>
#include <span>

#include "tinynet/core/parallel.hpp"
#include "tinynet/core/tensor.hpp"

namespace tinynet::data {

/// One batch: inputs and their targets (for MNIST: float32 [B,1,28,28] and int64 [B]).
struct Batch {
  Tensor data;
  Tensor target;
};

/// A data set a DataLoader can draw batches from.
///
/// requires: `size()`, the number of samples; `get_batch(indices)`, a Batch holding the
/// samples at `indices` in that order, in new tensors. `get_batch` must be safe to call
/// from a background thread while the caller reads earlier batches (the DataLoader
/// prefetches), which holds for any data set that does not change after construction.
template <typename D>
concept Dataset = requires(const D& d, std::span<const std::int64_t> indices) {
  { d.size() } -> std::convertible_to<std::int64_t>;
  { d.get_batch(indices) } -> std::same_as<Batch>;
};

/// A data set whose samples depend on the epoch (random augmentation, data/augment.hpp):
/// the DataLoader calls `set_epoch` before each pass gathers its first batch.
template <typename D>
concept EpochAware = Dataset<D> && requires(D& d, std::int64_t epoch) {
  d.set_epoch(epoch);
};

/// Copies rows `indices` (along dim 0) of the CPU tensor `src` into a new tensor of shape
/// [indices.size(), src.shape()[1:]...]. Throws IndexError for an index outside [0, rows).
inline Tensor gather_rows(const Tensor& src, std::span<const std::int64_t> indices) {
  TINYNET_CHECK(ShapeError, src.dim() >= 1, "gather_rows: expected a tensor with a batch dimension, got shape ",
                src.shape());
  TINYNET_CHECK(TypeError, src.device().is_cpu(), "gather_rows: data set tensors live on the CPU, got ", src.device());
  const std::int64_t rows = src.size(0);
  Shape shape = src.shape();
  shape[0] = static_cast<std::int64_t>(indices.size());
  Tensor out(shape, {src.dtype(), Device::cpu(), false});
  const std::size_t row_bytes = rows == 0 ? 0 : src.nbytes() / static_cast<std::size_t>(rows);
  const auto* from = static_cast<const unsigned char*>(src.raw_data());
  auto* to = static_cast<unsigned char*>(out.raw_data());
  for (std::int64_t i : indices)
    TINYNET_CHECK(IndexError, i >= 0 && i < rows, "get_batch: index ", i, " out of range for a data set of ", rows,
                  " samples");
  // Rows are independent; spread big batches (e.g. the 1000-image test batches) over threads.
  const auto n = static_cast<std::int64_t>(indices.size());
  const std::int64_t grain = std::max<std::int64_t>(1, (std::int64_t{1} << 18) / std::max<std::size_t>(row_bytes, 1));
  parallel_for(n, grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t k = begin; k < end; ++k)
      std::memcpy(to + static_cast<std::size_t>(k) * row_bytes,
                  from + static_cast<std::size_t>(indices[static_cast<std::size_t>(k)]) * row_bytes, row_bytes);
  });
  return out;
}

/// A data set over two tensors whose first dimensions agree: sample i is
/// (data[i], targets[i]). Copies of it share the tensors.
class TensorDataset {
 public:
  /// requires: `data` and `targets` are CPU tensors with equal size(0).
  TensorDataset(Tensor data, Tensor targets) : data_(std::move(data)), targets_(std::move(targets)) {
    TINYNET_CHECK(ShapeError, data_.dim() >= 1 && targets_.dim() >= 1 && data_.size(0) == targets_.size(0),
                  "TensorDataset: data ", data_.shape(), " and targets ", targets_.shape(),
                  " must have the same size in dim 0");
  }

  /// Number of samples.
  std::int64_t size() const { return data_.size(0); }
  /// The samples at `indices`, in that order, as new tensors.
  Batch get_batch(std::span<const std::int64_t> indices) const {
    return {gather_rows(data_, indices), gather_rows(targets_, indices)};
  }
  /// All inputs, [N, ...].
  const Tensor& data() const { return data_; }
  /// All targets, [N, ...].
  const Tensor& targets() const { return targets_; }

 protected:
  TensorDataset() = default;
  Tensor data_;
  Tensor targets_;
};

}  // namespace tinynet::data
