#include <catch2/catch.hpp>
#include <map>
#include <optional>
#include <set>
#include <tinynet/data/augment.hpp>
#include <tinynet/data/dataloader.hpp>
#include <tinynet/data/distributed_sampler.hpp>
#include <tinynet/data/subset.hpp>
#include <tinynet/tinynet.hpp>

#include "thread_count_restorer.hpp"

using namespace tinynet;
using namespace tinynet::data;

namespace {

// Images whose pixels are all distinct and nonzero: [n, c, h, w] with value 1 + flat index.
Tensor distinct_images(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
  std::vector<float> v(static_cast<std::size_t>(n * c * h * w));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i + 1);
  return from_vector(v, {n, c, h, w});
}

TensorDataset images_dataset(std::int64_t n) {
  std::vector<std::int64_t> labels(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) labels[static_cast<std::size_t>(i)] = i;
  return TensorDataset(distinct_images(n, 2, 5, 6), from_vector(labels, {n}));
}

float pixel(const Tensor& x, std::int64_t c, std::int64_t i, std::int64_t j) { return x.at<float>({c, i, j}); }

// The (dy, dx) for which `crop` is `image` padded by p and cropped with its top-left corner at
// row dy, column dx of the unpadded image, or none.
std::optional<std::pair<int, int>> crop_offset(const Tensor& image, const Tensor& crop, int p) {
  const std::int64_t c = image.size(0), h = image.size(1), w = image.size(2), size = crop.size(1);
  for (int dy = -p; dy <= h + p - size; ++dy)
    for (int dx = -p; dx <= w + p - size; ++dx) {
      bool same = true;
      for (std::int64_t ch = 0; ch < c && same; ++ch)
        for (std::int64_t i = 0; i < size && same; ++i)
          for (std::int64_t j = 0; j < size && same; ++j) {
            const std::int64_t r = i + dy, s = j + dx;
            const float expected = r >= 0 && r < h && s >= 0 && s < w ? pixel(image, ch, r, s) : 0.f;
            same = pixel(crop, ch, i, j) == expected;
          }
      if (same) return std::pair{dy, dx};
    }
  return std::nullopt;
}

std::vector<Batch> one_epoch(DataLoader<Augmented<TensorDataset>>& loader, std::int64_t epoch) {
  loader.set_epoch(epoch);
  std::vector<Batch> out;
  for (auto& b : loader) out.push_back({b.data.clone(), b.target.clone()});
  return out;
}

bool same_values(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return false;
  for (std::int64_t i = 0; i < a.numel(); ++i)
    if (a.data<float>()[i] != b.data<float>()[i]) return false;
  return true;
}

}  // namespace

TEST_CASE("RandomCrop: the padded image cropped at a uniformly random position", "[data][augment]") {
  const Tensor image = distinct_images(1, 2, 5, 6).select(0, 0);
  SampleRandom r0(1, 0, 0);
  const Tensor square = distinct_images(1, 2, 5, 5).select(0, 0);
  CHECK(same_values(RandomCrop{5, 0}(square, r0), square));
  std::set<std::pair<int, int>> seen;
  for (std::int64_t index = 0; index < 400; ++index) {
    SampleRandom random(7, 3, index);
    const Tensor crop = RandomCrop{4, 2}(image, random);
    REQUIRE(crop.shape() == Shape{2, 4, 4});
    const auto offset = crop_offset(image, crop, 2);
    REQUIRE(offset.has_value());
    seen.insert(*offset);
  }
  // The window's top-left corner ranges over 5 + 4 - 4 + 1 = 6 rows and 6 + 4 - 4 + 1 = 7
  // columns of the padded image, offsets -2 .. 3 and -2 .. 4: every one is drawn.
  CHECK(seen.size() == 6 * 7);
  SampleRandom r1(1, 0, 0);
  const RandomCrop too_large{9, 1}, small{2, 0};
  CHECK_THROWS_WITH(too_large(image, r1),
                    Catch::Contains("RandomCrop: a 9x9 crop does not fit a 5x6 image padded by 1"));
  CHECK_THROWS_WITH(small(zeros({5, 6}), r1), Catch::Contains("RandomCrop: expected one image [C, H, W]"));
}

TEST_CASE("RandomHorizontalFlip: mirrored with probability p", "[data][augment]") {
  const Tensor image = distinct_images(1, 2, 3, 4).select(0, 0);
  SampleRandom random(1, 0, 0);
  const Tensor flipped = RandomHorizontalFlip{1.0}(image, random);
  for (std::int64_t c = 0; c < 2; ++c)
    for (std::int64_t i = 0; i < 3; ++i)
      for (std::int64_t j = 0; j < 4; ++j) CHECK(pixel(flipped, c, i, j) == pixel(image, c, i, 3 - j));
  CHECK(same_values(RandomHorizontalFlip{0.0}(image, random), image));
  int flips = 0;
  for (std::int64_t index = 0; index < 2000; ++index) {
    SampleRandom r(5, 1, index);
    flips += !same_values(RandomHorizontalFlip{}(image, r), image);
  }
  CHECK(flips > 900);  // binomial(2000, 0.5): within 4.5 standard deviations
  CHECK(flips < 1100);
  const RandomHorizontalFlip bad{1.5};
  CHECK_THROWS_WITH(bad(image, random), Catch::Contains("p must be in [0, 1], got 1.5"));
}

TEST_CASE("Compose applies the transforms in order on one sample's random numbers", "[data][augment]") {
  const Tensor image = distinct_images(1, 1, 6, 6).select(0, 0);
  const Compose both{RandomCrop{6, 1}, RandomHorizontalFlip{}};
  SampleRandom a(3, 2, 9), b(3, 2, 9);
  const Tensor composed = both(image, a);
  const Tensor by_hand = RandomHorizontalFlip{}(RandomCrop{6, 1}(image, b), b);
  CHECK(same_values(composed, by_hand));
}

TEST_CASE("Augmented: batches depend only on (seed, epoch, sample), not on threads or ranks", "[data][augment]") {
  testing::ThreadCountRestorer restore;
  const Compose transform{RandomCrop{4, 2}, RandomHorizontalFlip{}};
  const auto run = [&](int threads, std::int64_t epoch) {
    set_num_threads(threads);
    DataLoader loader(Augmented(images_dataset(37), transform, 11), {.batch_size = 8, .shuffle = true, .seed = 4});
    return one_epoch(loader, epoch);
  };
  const std::vector<Batch> one = run(1, 2), two = run(2, 2), again = run(2, 2), other_epoch = run(2, 3);
  REQUIRE(one.size() == 5);
  bool epochs_differ = false;
  for (std::size_t k = 0; k < one.size(); ++k) {
    CHECK(one[k].data.shape() == Shape{one[k].target.numel(), 2, 4, 4});
    CHECK(same_values(one[k].data, two[k].data));
    CHECK(same_values(one[k].data, again[k].data));
    epochs_differ = epochs_differ || !same_values(one[k].data, other_epoch[k].data);
  }
  CHECK(epochs_differ);

  // Two ranks' shards: every sample comes out as the single process made it.
  std::map<std::int64_t, Tensor> single;
  for (const Batch& b : one)
    for (std::int64_t k = 0; k < b.target.numel(); ++k) single[b.target.data<std::int64_t>()[k]] = b.data.select(0, k);
  for (int rank = 0; rank < 2; ++rank) {
    DataLoader loader(Augmented(images_dataset(37), transform, 11),
                      std::make_unique<DistributedSampler>(37, 2, rank, DistributedSamplerOptions{.seed = 9}),
                      {.batch_size = 8});
    for (const Batch& b : one_epoch(loader, 2))
      for (std::int64_t k = 0; k < b.target.numel(); ++k)
        CHECK(same_values(b.data.select(0, k), single.at(b.target.data<std::int64_t>()[k])));
  }
}

TEST_CASE("Subset and random_split: PyTorch's lengths and fractions, disjoint and complete", "[data][subset]") {
  const TensorDataset all = images_dataset(10);
  const Subset<TensorDataset> some(all, {7, 2, 2});
  REQUIRE(some.size() == 3);
  const std::vector<std::int64_t> first{0, 2};
  CHECK(some.get_batch(first).target.data<std::int64_t>()[1] == 2);
  CHECK(some.get_batch(first).target.data<std::int64_t>()[0] == 7);
  const std::vector<std::int64_t> out_of_range{10};
  CHECK_THROWS_WITH(Subset<TensorDataset>(all, out_of_range),
                    Catch::Contains("Subset: index 10 out of range for a data set of 10"));

  const auto parts = random_split(all, {0.34, 0.33, 0.33}, 5);  // floor: 3, 3, 3; the one left to the first
  REQUIRE(parts.size() == 3);
  CHECK(parts[0].size() == 4);
  CHECK(parts[1].size() == 3);
  std::set<std::int64_t> seen;
  for (const auto& p : parts) seen.insert(p.indices().begin(), p.indices().end());
  CHECK(seen.size() == 10);
  CHECK(random_split(all, {6, 4}, 5)[1].size() == 4);
  CHECK(random_split(all, {6, 4}, 5)[0].indices() == random_split(all, {6, 4}, 5)[0].indices());
  CHECK(random_split(all, {6, 4}, 5)[0].indices() != random_split(all, {6, 4}, 6)[0].indices());
  CHECK_THROWS_WITH(random_split(all, {6, 3}), Catch::Contains("the lengths sum to 9 but the data set has 10"));
  CHECK_THROWS_WITH(random_split(all, {2.5, 7.5}), Catch::Contains("whole sample counts or fractions"));
}
