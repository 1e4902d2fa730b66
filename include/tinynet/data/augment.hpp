#pragma once
/// \file
/// Per-sample random transforms applied as batches are gathered (data augmentation), as
/// torchvision's RandomCrop, RandomHorizontalFlip and Compose are applied by a Dataset's
/// __getitem__:
///
/// \code
///   data::Augmented train(data::CIFAR10(root), data::Compose{data::RandomCrop{32, 4}, data::RandomHorizontalFlip{},
///                                                            data::CIFAR10::normalize()}, /*seed=*/1);
///   data::DataLoader loader(train, {.batch_size = 128, .shuffle = true, .seed = 1});
/// \endcode
/// Each sample's randomness is drawn from (seed, epoch, sample index) alone (counter-based
/// Philox, core/random.hpp), so a batch is the same whatever the thread count, the prefetch
/// or the rank that gathers it; the DataLoader tells the data set each pass's epoch.

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <utility>
#include <vector>

#include "tinynet/core/parallel.hpp"
#include "tinynet/core/random.hpp"
#include "tinynet/core/tensor.hpp"
#include "tinynet/data/dataset.hpp"
#include "tinynet/ops/cat.hpp"

namespace tinynet::data {

/// The random numbers of one sample in one epoch: the same for the same (seed, epoch, index).
class SampleRandom {
 public:
  SampleRandom(std::uint64_t seed, std::int64_t epoch, std::int64_t index)
      : stream_{mix(seed ^ mix(static_cast<std::uint64_t>(epoch) + 0x632BE59BD9B4E019ull)),
                static_cast<std::uint64_t>(index) << 8} {}

  /// Uniform in [0, 1).
  double uniform() { return stream_.uniform<double>(next_++); }
  /// Uniform over the integers 0, ..., n - 1 (n >= 1).
  std::int64_t below(std::int64_t n) {
    const auto k = static_cast<std::int64_t>(uniform() * static_cast<double>(n));
    return k < n ? k : n - 1;
  }

 private:
  static std::uint64_t mix(std::uint64_t z) {  // splitmix64's finaliser: nearby seeds, unrelated keys
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  RandomStream stream_;
  std::uint64_t next_ = 0;
};

/// A random transform of one float32 CPU sample [C, H, W]: returns the transformed sample.
using SampleTransform = std::function<Tensor(const Tensor& sample, SampleRandom& random)>;

namespace detail {
inline void check_image(const char* op, const Tensor& x) {
  TINYNET_CHECK(ShapeError, x.dim() == 3, op, ": expected one image [C, H, W], got shape ", x.shape());
  TINYNET_CHECK(TypeError, x.dtype() == DType::float32 && x.device().is_cpu(), op,
                ": expected a float32 CPU image, got ", x.dtype(), " on ", x.device());
}
}  // namespace detail

/// torchvision's RandomCrop(size, padding): the image padded with `padding` zeros on every
/// side, then a size x size window at a uniformly random position.
struct RandomCrop {
  std::int64_t size;
  std::int64_t padding = 0;

  Tensor operator()(const Tensor& x, SampleRandom& random) const {
    detail::check_image("RandomCrop", x);
    TINYNET_CHECK(ValueError, size > 0 && padding >= 0, "RandomCrop: size must be positive and padding >= 0, got ",
                  size, " and ", padding);
    const std::int64_t c = x.size(0), h = x.size(1), w = x.size(2);
    TINYNET_CHECK(ShapeError, size <= h + 2 * padding && size <= w + 2 * padding, "RandomCrop: a ", size, "x", size,
                  " crop does not fit a ", h, "x", w, " image padded by ", padding);
    const std::int64_t top = random.below(h + 2 * padding - size + 1) - padding;
    const std::int64_t left = random.below(w + 2 * padding - size + 1) - padding;
    Tensor out(Shape{c, size, size}, {DType::float32, Device::cpu(), false});
    const float* in = x.data<float>();
    float* o = out.data<float>();
    for (std::int64_t ch = 0; ch < c; ++ch)
      for (std::int64_t i = 0; i < size; ++i)
        for (std::int64_t j = 0; j < size; ++j) {
          const std::int64_t r = top + i, s = left + j;
          o[(ch * size + i) * size + j] = r >= 0 && r < h && s >= 0 && s < w ? in[(ch * h + r) * w + s] : 0.f;
        }
    return out;
  }
};

/// torchvision's RandomHorizontalFlip(p): the image mirrored left to right with probability p.
struct RandomHorizontalFlip {
  double p = 0.5;

  Tensor operator()(const Tensor& x, SampleRandom& random) const {
    detail::check_image("RandomHorizontalFlip", x);
    TINYNET_CHECK(ValueError, p >= 0 && p <= 1, "RandomHorizontalFlip: p must be in [0, 1], got ", p);
    if (random.uniform() >= p) return x;
    const std::int64_t rows = x.size(0) * x.size(1), w = x.size(2);
    Tensor out(x.shape(), {DType::float32, Device::cpu(), false});
    const float* in = x.data<float>();
    float* o = out.data<float>();
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t j = 0; j < w; ++j) o[r * w + j] = in[r * w + (w - 1 - j)];
    return out;
  }
};

/// The transforms applied in order.
class Compose {
 public:
  Compose(std::initializer_list<SampleTransform> transforms) : transforms_(transforms) {}
  explicit Compose(std::vector<SampleTransform> transforms) : transforms_(std::move(transforms)) {}

  Tensor operator()(const Tensor& x, SampleRandom& random) const {
    Tensor y = x;
    for (const SampleTransform& t : transforms_) y = t(y, random);
    return y;
  }

 private:
  std::vector<SampleTransform> transforms_;
};

/// A data set whose inputs get `transform` per sample as batches are gathered; the targets
/// are the underlying data set's. Every sample of a batch must come out the same shape.
template <Dataset D>
class Augmented {
 public:
  Augmented(D dataset, SampleTransform transform, std::uint64_t seed = 0)
      : dataset_(std::move(dataset)), transform_(std::move(transform)), seed_(seed) {}

  std::int64_t size() const { return dataset_.size(); }
  /// The epoch whose randomness the next batches draw (the DataLoader sets it every pass).
  void set_epoch(std::int64_t epoch) { epoch_ = epoch; }
  std::int64_t epoch() const { return epoch_; }
  const D& dataset() const { return dataset_; }

  Batch get_batch(std::span<const std::int64_t> indices) const {
    Batch b = dataset_.get_batch(indices);
    const auto n = static_cast<std::int64_t>(indices.size());
    if (n == 0) return b;
    std::vector<Tensor> out(static_cast<std::size_t>(n));
    parallel_for(n, 1, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t k = lo; k < hi; ++k) {
        SampleRandom random(seed_, epoch_, indices[static_cast<std::size_t>(k)]);
        out[static_cast<std::size_t>(k)] = transform_(b.data.select(0, k), random);
      }
    });
    for (std::int64_t k = 1; k < n; ++k)
      TINYNET_CHECK(ShapeError, out[static_cast<std::size_t>(k)].shape() == out[0].shape(),
                    "Augmented: the transform gave samples of shape ", out[0].shape(), " and ",
                    out[static_cast<std::size_t>(k)].shape(), " in one batch");
    b.data = stack(out, 0);
    return b;
  }

 private:
  D dataset_;
  SampleTransform transform_;
  std::uint64_t seed_;
  std::int64_t epoch_ = 0;
};

}  // namespace tinynet::data
