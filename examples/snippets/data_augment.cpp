// docs/data.md: your own images as a data set, a validation split, and per-sample random
// augmentation as batches are made. Exits non-zero unless every batch has the expected shape.
#include <cstdio>
#include <tinynet/data/augment.hpp>
#include <tinynet/data/dataloader.hpp>
#include <tinynet/data/image_dataset.hpp>
#include <tinynet/data/subset.hpp>
#include <tinynet/tinynet.hpp>

using namespace tinynet;

int main() {
  // [own-data]
  // Your own images as bytes, one [C, H, W] image after another (read from your files, or made
  // in memory as here), and their labels. Batches become float32 [B, C, H, W] in [0, 1].
  std::vector<std::uint8_t> pixels(1000 * 3 * 32 * 32);
  std::vector<std::int64_t> labels(1000);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<std::uint8_t>(i % 251);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int64_t>(i % 10);
  data::ImageDataset all("my images", std::move(pixels), {3, 32, 32}, std::move(labels));

  // 90% to train on, 10% to validate on, the split drawn from seed 42.
  auto parts = data::random_split(all, {0.9, 0.1}, 42);

  // torchvision's recipe: padded by 4 black pixels, cropped back to 32x32 at random, flipped at
  // random, then normalised per channel; per sample and epoch, the same for any thread count or rank.
  const data::Normalize normalize({0.49, 0.48, 0.45}, {0.25, 0.24, 0.26});
  data::Augmented train(parts[0], data::Compose{data::RandomCrop{32, 4}, data::RandomHorizontalFlip{}, normalize},
                        /*seed=*/1);
  data::DataLoader loader(train, {.batch_size = 128, .shuffle = true, .seed = 1});
  data::DataLoader validation(data::Augmented(parts[1], normalize), {.batch_size = 100});
  // [own-data]

  bool ok = train.size() == 900 && parts[1].size() == 100;
  for (int epoch = 1; epoch <= 2; ++epoch) {
    loader.set_epoch(epoch);
    std::int64_t seen = 0;
    for (auto& batch : loader) {
      ok = ok && batch.data.size(1) == 3 && batch.data.size(2) == 32 && batch.data.size(3) == 32;
      seen += batch.target.numel();
    }
    ok = ok && seen == 900;
  }
  for (auto& batch : validation) ok = ok && batch.data.shape() == Shape{100, 3, 32, 32};
  std::printf("%s\n", ok ? "augmented batches: ok" : "augmented batches: WRONG");
  return ok ? 0 : 1;
}
