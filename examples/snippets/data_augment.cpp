// docs/data.md: your own images as a data set, a validation split, and per-sample random
// augmentation as batches are made. Exits non-zero unless every batch has the expected shape.
#include <cstdio>
#include <tinynet/data/augment.hpp>
#include <tinynet/data/dataloader.hpp>
#include <tinynet/data/subset.hpp>
#include <tinynet/tinynet.hpp>

using namespace tinynet;

int main() {
  // [own-data]
  // Your own images and labels, from memory (or your files): float32 [N, C, H, W] and int64 [N].
  std::vector<float> pixels(1000 * 3 * 32 * 32);
  std::vector<std::int64_t> labels(1000);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<float>(i % 255) / 255.f;
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int64_t>(i % 10);
  data::TensorDataset all(from_vector(pixels, {1000, 3, 32, 32}), from_vector(labels, {1000}));

  // 90% to train on, 10% to validate on, the split drawn from seed 42.
  auto parts = data::random_split(all, {0.9, 0.1}, 42);

  // The training images padded by 4, cropped back to 32x32 at random and flipped at random,
  // per sample and per epoch, the same for any thread count or rank.
  data::Augmented train(parts[0], data::Compose{data::RandomCrop{32, 4}, data::RandomHorizontalFlip{}}, /*seed=*/1);
  data::DataLoader loader(train, {.batch_size = 128, .shuffle = true, .seed = 1});
  data::DataLoader validation(parts[1], {.batch_size = 100});
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
