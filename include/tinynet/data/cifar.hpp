#pragma once
/// \file
/// CIFAR-10, like torchvision.datasets.CIFAR10, read from its binary version.
///
/// `CIFAR10(root, {.train = true})` reads root/cifar-10-batches-bin/: data_batch_1.bin ..
/// data_batch_5.bin (50,000 training images) or test_batch.bin (10,000). Each file is
/// records of 1 label byte (0..9) and 3072 pixel bytes: the 32x32 red, green and blue
/// planes, rows top to bottom. Images stay bytes (ImageDataset) and become float32
/// [B, 3, 32, 32] per batch, in [0, 1], then `transform`. With `.download = true` missing
/// files are unpacked from cifar-10-binary.tar.gz, fetched first from its canonical address
/// and refused unless its MD5 is the published c32a1d4ab5d03f1284b67883e8d87530
/// (https://www.cs.toronto.edu/~kriz/cifar.html lists it).

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tinynet/data/archive_fetch.hpp"
#include "tinynet/data/content_reader.hpp"
#include "tinynet/data/error.hpp"
#include "tinynet/data/image_dataset.hpp"
#include "tinynet/data/transforms.hpp"

namespace tinynet::data {

/// The CIFAR-10 binary archive: its canonical address, published MD5 and the files it holds.
inline ArchiveSource cifar10_source() {
  return {.name = "CIFAR-10",
          .archive = "cifar-10-binary.tar.gz",
          .md5 = "c32a1d4ab5d03f1284b67883e8d87530",
          .urls = {"https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"},
          .folder = "cifar-10-batches-bin",
          .files = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin",
                    "test_batch.bin"}};
}

/// Options of CIFAR10, named like torchvision's keyword arguments.
struct CIFAR10Options {
  bool train = true;         ///< the five training batches (50,000 images), else the test batch (10,000)
  bool download = false;     ///< fetch and unpack the archive into root first, when files are missing
  Transform transform = {};  ///< applied to each batch [B, 3, 32, 32] after scaling to [0, 1]
  FetchOptions fetch = {};   ///< how to download, when `download` is set
  std::optional<ArchiveSource> source = {};  ///< where from, when `download` is set (default cifar10_source())
};

/// CIFAR-10: 32x32 colour images in 10 classes. A Dataset of float32 [B, 3, 32, 32] and int64
/// [B] batches, stored as bytes (150 MB for the training set); copies share the data.
class CIFAR10 : public ImageDataset {
 public:
  /// Loads the split `opts.train` selects from root/cifar-10-batches-bin/. Throws FileError when
  /// a file is missing, FormatError when one is not whole records or holds a label outside
  /// 0..9, FetchError (or FormatError for a damaged archive) when `download` fails.
  explicit CIFAR10(const std::filesystem::path& root, const CIFAR10Options& opts = {})
      : ImageDataset(load(root, opts)), folder_(root / cifar10_source().folder) {}

  static constexpr std::int64_t kRecordBytes = 1 + 3 * 32 * 32;

  /// Normalize with the training set's per-channel mean and std over all its pixels in
  /// [0, 1]: mean (125.31, 122.95, 113.87) / 255, std (0.2470, 0.2435, 0.2616).
  static Normalize normalize() { return Normalize({0.4914, 0.4822, 0.4465}, {0.2470, 0.2435, 0.2616}); }
  /// Class names, indexed by label.
  static std::span<const char* const> classes() {
    static constexpr std::array<const char*, 10> kNames = {"airplane", "automobile", "bird",  "cat",  "deer",
                                                           "dog",      "frog",       "horse", "ship", "truck"};
    return kNames;
  }
  /// The folder the files were read from.
  const std::filesystem::path& folder() const { return folder_; }

  /// Appends the records of one binary batch file to `pixels` and `labels`.
  static void read_batch_file(const std::filesystem::path& path, std::vector<std::uint8_t>& pixels,
                              std::vector<std::int64_t>& labels) {
    ContentReader in(path);
    std::vector<std::uint8_t> record(kRecordBytes);
    for (std::int64_t i = 0;; ++i) {
      const std::size_t got = in.read(record.data(), record.size());
      if (got == 0) break;
      TINYNET_CHECK(FormatError, got == record.size(), "CIFAR-10: '", path.string(), "' ends inside record ", i, " (",
                    in.position(), " bytes, not a whole number of ", kRecordBytes, "-byte records: truncated?)");
      TINYNET_CHECK(FormatError, record[0] <= 9, "CIFAR-10: '", path.string(), "': record ", i, " has label ",
                    unsigned{record[0]}, ", expected 0..9 (not a CIFAR-10 binary batch?)");
      labels.push_back(record[0]);
      pixels.insert(pixels.end(), record.begin() + 1, record.end());
    }
  }

 private:
  static ImageDataset load(const std::filesystem::path& root, const CIFAR10Options& opts) {
    const ArchiveSource src = cifar10_source();
    if (opts.download) {
      ArchiveSource from = opts.source.value_or(src);
      from.name = src.name;  // only the addresses are the caller's; what to unpack, and where, is ours
      from.folder = src.folder;
      from.files = src.files;
      fetch_archive(root, from, opts.fetch);
    }
    const std::filesystem::path dir = root / src.folder;
    std::vector<std::string> names;
    if (opts.train)
      names.assign(src.files.begin(), src.files.begin() + 5);
    else
      names.push_back(src.files.back());
    std::vector<std::uint8_t> pixels;
    std::vector<std::int64_t> labels;
    pixels.reserve(names.size() * 10000 * (kRecordBytes - 1));
    for (const std::string& name : names) {
      std::error_code ec;
      TINYNET_CHECK(FileError, std::filesystem::is_regular_file(dir / name, ec), "CIFAR-10: no ", name, " in '",
                    dir.string(), "'; pass .download = true or unpack cifar-10-binary.tar.gz into '", root.string(),
                    "'");
      read_batch_file(dir / name, pixels, labels);
    }
    return ImageDataset("CIFAR-10", std::move(pixels), Shape{3, 32, 32}, std::move(labels), opts.transform);
  }

  std::filesystem::path folder_;
};

}  // namespace tinynet::data
