#include <catch2/catch.hpp>
#include <tinynet/data/augment.hpp>
#include <tinynet/data/dataloader.hpp>
#include <tinynet/data/distributed_sampler.hpp>
#include <tinynet/data/image_dataset.hpp>
#include <tinynet/tinynet.hpp>

#include "thread_count_restorer.hpp"

using namespace tinynet;
using namespace tinynet::data;
using Catch::Contains;

namespace {

// Two images [2, 2, 3] whose bytes are 0, 10, 20, ...: image k, channel c, pixel p holds
// 10 * (12k + 6c + p).
ImageDataset two_images(Transform transform = {}) {
  std::vector<std::uint8_t> px(24);
  for (std::size_t i = 0; i < px.size(); ++i) px[i] = static_cast<std::uint8_t>(10 * i);
  return ImageDataset("two", px, Shape{2, 2, 3}, {7, 3}, std::move(transform));
}

std::vector<float> values(const Tensor& t) { return std::vector<float>(t.data<float>(), t.data<float>() + t.numel()); }

}  // namespace

TEST_CASE("ImageDataset: a batch's bytes become v / 255, in the order asked", "[data][image]") {
  const ImageDataset ds = two_images();
  CHECK(ds.size() == 2);
  CHECK(ds.pixels().size() == 24);
  const std::int64_t order[] = {1, 0, 1};
  const Batch b = ds.get_batch(order);
  REQUIRE(b.data.shape() == Shape{3, 2, 2, 3});
  CHECK(b.data.dtype() == DType::float32);
  CHECK(b.target.dtype() == DType::int64);
  CHECK(b.target.data<std::int64_t>()[0] == 3);
  CHECK(b.target.data<std::int64_t>()[1] == 7);
  const std::vector<float> v = values(b.data);
  for (std::size_t k = 0; k < 3; ++k)
    for (std::size_t i = 0; i < 12; ++i) {
      const std::size_t image = k == 1 ? 0 : 1;
      CHECK(v[k * 12 + i] == static_cast<float>(10 * (12 * image + i)) / 255.0f);
    }
  CHECK(values(ds.data()) == values(ds.get_batch(std::vector<std::int64_t>{0, 1}).data));
}

TEST_CASE("ImageDataset: a per-channel Normalize is applied per batch, as the two steps compute it", "[data][image]") {
  const Normalize norm({0.5, 0.25}, {0.5, 2.0});
  const ImageDataset ds = two_images(norm);
  const std::vector<float> v = values(ds.data());
  for (std::size_t i = 0; i < 24; ++i) {
    const std::size_t c = (i / 6) % 2;
    const float x = static_cast<float>(10 * i) / 255.0f;
    CHECK(v[i] == (c == 0 ? (x - 0.5f) / 0.5f : (x - 0.25f) / 2.0f));
  }
  // Folded into the byte conversion, Normalize gives exactly what it gives on the float images.
  CHECK(values(ds.data()) == values(norm(two_images().data())));
  // Every byte value, every channel: the same floats as the two steps.
  std::vector<std::uint8_t> all(2 * 256);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint8_t>(i % 256);
  const Normalize mnist{0.1307, 0.3081};
  const ImageDataset bytes("bytes", all, Shape{2, 16, 16}, {0}, mnist);
  const ImageDataset plain("bytes", all, Shape{2, 16, 16}, {0});
  CHECK(values(bytes.data()) == values(mnist(plain.data())));
}

TEST_CASE("ImageDataset: any other transform is applied to each batch", "[data][image]") {
  const ImageDataset ds = two_images([](const Tensor& x) { return (x * 2.0).detach(); });
  const std::vector<float> v = values(ds.get_batch(std::vector<std::int64_t>{1}).data);
  CHECK(v[0] == 2.0f * (120.0f / 255.0f));

  const ImageDataset drops = two_images([](const Tensor& x) { return alias_with_shape(x, Shape{x.numel()}).detach(); });
  CHECK_THROWS_AS(drops.get_batch(std::vector<std::int64_t>{0, 1}), ShapeError);
  CHECK_THROWS_WITH(drops.get_batch(std::vector<std::int64_t>{0, 1}),
                    Contains("two: the transform must return one row per image (2)"));
}

TEST_CASE("ImageDataset: misuse names the data set and the sizes", "[data][image][errors]") {
  CHECK_THROWS_WITH(ImageDataset("mine", std::vector<std::uint8_t>(23), Shape{2, 2, 3}, {1, 2}),
                    Contains("mine: 23 bytes of pixels for 2 labels of images [2, 2, 3] (expected 24)"));
  CHECK_THROWS_WITH(ImageDataset("mine", std::vector<std::uint8_t>(4), Shape{2, 2}, {1}),
                    Contains("mine: expected images of shape [C, H, W], got [2, 2]"));
  CHECK_THROWS_WITH(two_images(Normalize({0.1, 0.2, 0.3}, {1, 1, 1})),
                    Contains("two: Normalize has 3 channel means but the images have 2 channels"));
  CHECK_THROWS_AS(two_images().get_batch(std::vector<std::int64_t>{2}), IndexError);
}

TEST_CASE("Normalize: per channel on images [C, H, W] and [N, C, H, W], one value for all", "[data][transforms]") {
  // Channel 0 holds 1, 2; channel 1 holds 3, 4 (images 1x2).
  const Tensor image = from_vector(std::vector<float>{1, 2, 3, 4}, {2, 1, 2});
  const Normalize per_channel({1.0, 2.0}, {2.0, 4.0});
  CHECK(values(per_channel(image)) == std::vector<float>{0.0f, 0.5f, 0.25f, 0.5f});
  const Tensor batch = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 1, 2});
  CHECK(values(per_channel(batch)) == std::vector<float>{0.0f, 0.5f, 0.25f, 0.5f, 2.0f, 2.5f, 1.25f, 1.5f});
  CHECK(values(Normalize{1.0, 2.0}(batch)) == std::vector<float>{0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 2.5f, 3.0f, 3.5f});
  CHECK(per_channel.channels() == 2);
  CHECK(Normalize(0.5, 0.25).mean() == std::vector<double>{0.5});

  CHECK_THROWS_WITH(per_channel(from_vector(std::vector<float>{1, 2, 3}, {3, 1, 1})),
                    Contains("Normalize: 2 channel means need images [..., 2, H, W], got shape [3, 1, 1]"));
  CHECK_THROWS_AS(Normalize({0.5, 0.5}, {1.0, 0.0}), ValueError);
  CHECK_THROWS_WITH(Normalize({0.5, 0.5}, {1.0}), Contains("Normalize: expected as many means as stds"));
  CHECK_THROWS_AS(per_channel(from_vector(std::vector<double>{1, 2}, {2, 1, 1})), TypeError);
}

TEST_CASE(
    "Augmented image data: torchvision's order (crop, flip, normalise) and the same batches for any "
    "thread count and rank layout",
    "[data][image][augment]") {
  testing::ThreadCountRestorer restore;
  std::vector<std::uint8_t> px(12 * 3 * 4 * 4);
  for (std::size_t i = 0; i < px.size(); ++i) px[i] = static_cast<std::uint8_t>(1 + i % 250);
  std::vector<std::int64_t> labels(12);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int64_t>(i);
  const ImageDataset images("twelve", px, Shape{3, 4, 4}, labels);
  const Normalize norm({0.5, 0.4, 0.3}, {0.2, 0.25, 0.5});
  const Augmented train(images, Compose{RandomCrop{4, 2}, RandomHorizontalFlip{}, norm}, /*seed=*/5);

  // Padding is black before normalising, as torchvision pads the image: -mean / std.
  bool padded = false;
  for (std::int64_t i = 0; i < 12; ++i) {
    const Tensor x = train.get_batch(std::vector<std::int64_t>{i}).data;
    for (std::int64_t k = 0; k < x.numel(); ++k) {
      const float v = x.data<float>()[k];
      const auto c = static_cast<std::size_t>((k / 16) % 3);
      const float black = norm(0.0f, static_cast<std::int64_t>(c));
      padded = padded || v == black;
    }
  }
  CHECK(padded);

  auto epoch_batches = [&](int threads, std::int64_t epoch) {
    set_num_threads(threads);
    DataLoader loader(train, {.batch_size = 5, .shuffle = true, .seed = 3});
    loader.set_epoch(epoch);
    std::map<std::int64_t, std::vector<float>> by_sample;
    for (auto& b : loader)
      for (std::int64_t k = 0; k < b.data.size(0); ++k)
        by_sample[b.target.data<std::int64_t>()[k]] = values(b.data.select(0, k).contiguous());
    return by_sample;
  };
  const auto one = epoch_batches(1, 2);
  CHECK(one == epoch_batches(2, 2));
  CHECK(one != epoch_batches(1, 3));

  // Two ranks' shares, gathered separately, hold each sample exactly as one process does.
  std::map<std::int64_t, std::vector<float>> ranks;
  for (std::int64_t rank = 0; rank < 2; ++rank) {
    DataLoader loader(
        train,
        std::make_unique<DistributedSampler>(12, 2, static_cast<int>(rank), DistributedSamplerOptions{.seed = 3}),
        {.batch_size = 4});
    loader.set_epoch(2);
    for (auto& b : loader)
      for (std::int64_t k = 0; k < b.data.size(0); ++k)
        ranks[b.target.data<std::int64_t>()[k]] = values(b.data.select(0, k).contiguous());
  }
  CHECK(ranks == one);
}
