#pragma once
/// \file
/// ImageDataset: images kept as bytes and made float32 per batch, as torchvision's MNIST and
/// CIFAR10 keep `uint8` arrays and apply ToTensor and Normalize in `__getitem__`.
///
/// A byte per pixel is a quarter of a float32 copy (MNIST's training set: 47 MB, not 188 MB).
/// A batch's bytes v become v / 255 (ToTensor), then get the data set's transform. A Normalize
/// transform is folded into the conversion: each channel's 256 possible results are computed
/// once, with Normalize's own float arithmetic, so the values are those of the two steps.

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tinynet/core/parallel.hpp"
#include "tinynet/core/tensor.hpp"
#include "tinynet/data/dataset.hpp"
#include "tinynet/data/transforms.hpp"

namespace tinynet::data {

/// Images [N, C, H, W] held as bytes, with int64 labels [N]: a Dataset whose batches are
/// float32 [B, C, H, W] (bytes / 255, then the transform) and int64 [B]. Copies share the data.
class ImageDataset {
 public:
  /// `pixels` holds N images of `image_shape` ([C, H, W]) one after another, row-major;
  /// `labels` one label per image. `name` is used in messages. Throws ShapeError when the
  /// sizes disagree, or when a per-channel Normalize does not have C channels.
  ImageDataset(std::string name, std::vector<std::uint8_t> pixels, Shape image_shape, std::vector<std::int64_t> labels,
               Transform transform = {})
      : state_(std::make_shared<State>()) {
    State& s = *state_;
    const auto n = static_cast<std::int64_t>(labels.size());
    TINYNET_CHECK(ShapeError, image_shape.rank() == 3, name, ": expected images of shape [C, H, W], got ", image_shape);
    const std::int64_t per_image = image_shape.numel();
    TINYNET_CHECK(ShapeError, static_cast<std::int64_t>(pixels.size()) == n * per_image, name, ": ", pixels.size(),
                  " bytes of pixels for ", n, " labels of images ", image_shape, " (expected ", n * per_image, ")");
    s.name = std::move(name);
    s.pixels = std::move(pixels);
    s.image_shape = std::move(image_shape);
    s.transform = std::move(transform);
    s.targets = Tensor(Shape{n}, {DType::int64, Device::cpu(), false});
    if (n > 0) std::memcpy(s.targets.data<std::int64_t>(), labels.data(), labels.size() * sizeof(std::int64_t));
    s.tables = byte_tables(s);
  }

  /// Number of images.
  std::int64_t size() const { return state_->targets.size(0); }

  /// The images at `indices` as float32 [B, C, H, W] (converted, then transformed) and
  /// their labels int64 [B]. Throws IndexError for an index outside [0, size()).
  Batch get_batch(std::span<const std::int64_t> indices) const {
    const State& s = *state_;
    Tensor target = gather_rows(s.targets, indices);  // checks the indices
    Shape shape{static_cast<std::int64_t>(indices.size()), s.image_shape[0], s.image_shape[1], s.image_shape[2]};
    Tensor data(shape, {DType::float32, Device::cpu(), false});
    convert(indices, data.data<float>());
    if (s.transform && !s.normalize_folded) data = apply_transform(s, data);
    return {std::move(data), std::move(target)};
  }

  /// All images as get_batch gives them, float32 [N, C, H, W]: a new tensor each call.
  Tensor data() const {
    std::vector<std::int64_t> all(static_cast<std::size_t>(size()));
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(i);
    return get_batch(all).data;
  }
  /// All labels, int64 [N].
  const Tensor& targets() const { return state_->targets; }
  /// The stored bytes, image after image, each [C, H, W].
  std::span<const std::uint8_t> pixels() const { return state_->pixels; }
  /// [C, H, W] of every image.
  const Shape& image_shape() const { return state_->image_shape; }
  const Transform& transform() const { return state_->transform; }

 private:
  using ByteTable = std::array<float, 256>;
  struct State {
    std::string name;
    std::vector<std::uint8_t> pixels;
    Shape image_shape;
    Tensor targets;
    Transform transform;
    std::vector<ByteTable> tables;  // per channel, or one for all: byte -> float32 value
    bool normalize_folded = false;
  };

  // v / 255 exactly as torchvision's ToTensor computes it, then a Normalize transform.
  static std::vector<ByteTable> byte_tables(State& s) {
    const Normalize* norm = s.transform ? s.transform.target<Normalize>() : nullptr;
    const std::int64_t channels = norm != nullptr ? norm->channels() : 1;
    TINYNET_CHECK(ShapeError, channels == 1 || channels == s.image_shape[0], s.name, ": Normalize has ", channels,
                  " channel means but the images have ", s.image_shape[0], " channels");
    s.normalize_folded = norm != nullptr;
    std::vector<ByteTable> tables(static_cast<std::size_t>(channels));
    for (std::int64_t c = 0; c < channels; ++c)
      for (int v = 0; v < 256; ++v) {
        const float x = static_cast<float>(v) / 255.0f;
        tables[static_cast<std::size_t>(c)][static_cast<std::size_t>(v)] = norm != nullptr ? (*norm)(x, c) : x;
      }
    return tables;
  }

  void convert(std::span<const std::int64_t> indices, float* out) const {
    const State& s = *state_;
    const std::int64_t plane = s.image_shape[1] * s.image_shape[2], per_image = s.image_shape[0] * plane;
    const auto n = static_cast<std::int64_t>(indices.size());
    const std::int64_t grain =
        std::max<std::int64_t>(1, (std::int64_t{1} << 16) / std::max<std::int64_t>(per_image, 1));
    parallel_for(n, grain, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t k = begin; k < end; ++k) {
        const std::uint8_t* from = s.pixels.data() + indices[static_cast<std::size_t>(k)] * per_image;
        float* to = out + k * per_image;
        for (std::int64_t c = 0; c < s.image_shape[0]; ++c) {
          const ByteTable& table = s.tables[s.tables.size() == 1 ? 0 : static_cast<std::size_t>(c)];
          for (std::int64_t i = c * plane; i < (c + 1) * plane; ++i) to[i] = table[from[i]];
        }
      }
    });
  }

  static Tensor apply_transform(const State& s, const Tensor& batch) {
    Tensor x = s.transform(batch);
    TINYNET_CHECK(ShapeError, x.defined() && x.dim() >= 1 && x.size(0) == batch.size(0), s.name,
                  ": the transform must return one row per image (", batch.size(0), "), got ",
                  x.defined() ? x.shape().str() : std::string("an undefined tensor"));
    return x;
  }

  std::shared_ptr<State> state_;
};

}  // namespace tinynet::data
