#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <iostream>
#include <tinynet/data/mnist.hpp>

#include "data/helpers.hpp"

using namespace tinynet;
using namespace tinynet::data;
using namespace test_data;
using Catch::Contains;

namespace {

std::array<std::int64_t, 10> histogram(const Tensor& targets) {
  std::array<std::int64_t, 10> h{};
  for (std::int64_t i = 0; i < targets.numel(); ++i) ++h[static_cast<std::size_t>(targets.data<std::int64_t>()[i])];
  return h;
}

struct Moments {
  double mean, std;
};

// Mean and (population) std over every element, accumulated in double.
Moments moments(const Tensor& x) {
  const float* p = x.data<float>();
  double sum = 0, sq = 0;
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    sum += p[i];
    sq += static_cast<double>(p[i]) * p[i];
  }
  const double n = static_cast<double>(x.numel()), mean = sum / n;
  return {mean, std::sqrt(sq / n - mean * mean)};
}

// A mnist/ folder in `dir` with the given files for the test split.
void write_split(const TempDir& dir, const Bytes& images, const Bytes& labels) {
  write_file(dir / "mnist/t10k-images-idx3-ubyte", images);
  write_file(dir / "mnist/t10k-labels-idx1-ubyte", labels);
}

MNISTOptions test_split() {
  MNISTOptions o;
  o.train = false;
  return o;
}

}  // namespace

TEST_CASE("mnist: real MNIST has 60000 + 10000 images of 28x28 with the published label counts", "[mnist][real]") {
  const MNIST& train = mnist(true);
  const MNIST& test = mnist(false);
  CHECK(train.size() == 60000);
  CHECK(test.size() == 10000);
  // Stored as bytes: 47 MB, a quarter of the float32 images.
  CHECK(train.pixels().size() == 60000u * 784u);
  CHECK(train.image_shape() == Shape{1, 28, 28});
  const Tensor images = train.data();
  CHECK(images.shape() == Shape{60000, 1, 28, 28});
  CHECK(images.dtype() == DType::float32);
  CHECK(train.targets().shape() == Shape{60000});
  CHECK(train.targets().dtype() == DType::int64);
  CHECK(train.folder() == data_root() / "mnist");

  const auto h_train = histogram(train.targets());
  const auto h_test = histogram(test.targets());
  CHECK(h_train == std::array<std::int64_t, 10>{5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949});
  CHECK(h_test == std::array<std::int64_t, 10>{980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009});
  std::int64_t total = 0;
  for (auto c : h_train) total += c;
  CHECK(total == 60000);
  CHECK(train.targets().data<std::int64_t>()[0] == 5);  // the famous first "5"
  CHECK(test.targets().data<std::int64_t>()[0] == 7);

  // Pixels are bytes / 255: in [0, 1] with both ends reached.
  const Moments m = moments(images);
  CHECK(m.mean == Approx(0.1307).margin(5e-5));
  CHECK(m.std == Approx(0.3081).margin(5e-5));
  float lo = 1, hi = 0;
  for (std::int64_t i = 0; i < images.numel(); ++i) {
    lo = std::min(lo, images.data<float>()[i]);
    hi = std::max(hi, images.data<float>()[i]);
  }
  CHECK(lo == 0.0f);
  CHECK(hi == 1.0f);

  // Each pixel is exactly its byte / 255, in file order.
  const IdxArray raw = read_idx(data_root() / "mnist/t10k-images-idx3-ubyte.gz");
  const Tensor test_images = test.data();
  const float* px = test_images.data<float>();
  bool all_equal = true;
  for (std::size_t i = 0; i < raw.bytes.size(); ++i)
    all_equal = all_equal && px[i] == static_cast<float>(raw.bytes[i]) / 255.0f;
  CHECK(all_equal);
}

TEST_CASE("mnist: real Fashion-MNIST has 6000 / 1000 images of each class", "[mnist][real]") {
  const FashionMNIST& train = fashion(true);
  const FashionMNIST& test = fashion(false);
  CHECK(train.size() == 60000);
  CHECK(test.size() == 10000);
  CHECK(train.data().shape() == Shape{60000, 1, 28, 28});
  CHECK(train.pixels().size() == 60000u * 784u);
  CHECK(train.folder() == data_root() / "fashion-mnist");
  for (auto c : histogram(train.targets())) CHECK(c == 6000);
  for (auto c : histogram(test.targets())) CHECK(c == 1000);
  CHECK(train.targets().data<std::int64_t>()[0] == 9);
  CHECK(std::string(FashionMNIST::classes()[9]) == "Ankle boot");
  CHECK(std::string(MNIST::classes()[3]) == "3 - three");
}

TEST_CASE("mnist: Fashion-MNIST normalisation constants are its training-set mean and std",
          "[mnist][real][fashion-stats]") {
  const Moments m = moments(fashion(true).data());
  std::cout.precision(9);
  std::cout << "Fashion-MNIST training set (60000 x 784 pixels, /255): mean " << m.mean << ", std " << m.std
            << std::endl;
  CHECK(FashionMNIST::normalize().mean()[0] == Approx(m.mean).margin(5e-5));
  CHECK(FashionMNIST::normalize().std()[0] == Approx(m.std).margin(5e-5));
  CHECK(MNIST::normalize().mean() == std::vector<double>{0.1307});
  CHECK(MNIST::normalize().std() == std::vector<double>{0.3081});
}

TEST_CASE("mnist: a Normalize transform is applied to every image", "[mnist][real]") {
  MNISTOptions opts = test_split();
  opts.transform = MNIST::normalize();
  const MNIST normalized(data_root(), opts);
  const Tensor raw = mnist(false).data();
  const Tensor images = normalized.data();
  REQUIRE(images.shape() == raw.shape());
  for (std::int64_t i : {0, 100, 7840000 - 1})
    CHECK(images.data<float>()[i] == (raw.data<float>()[i] - 0.1307f) / 0.3081f);
  // Per batch, as the whole set: the same values as Normalize on the float images.
  const Tensor whole = MNIST::normalize()(raw);
  CHECK(std::memcmp(images.data<float>(), whole.data<float>(), raw.nbytes()) == 0);
  const Moments m = moments(images);
  CHECK(std::abs(m.mean) < 0.02);  // the test split's statistics are close to the training split's
  CHECK(m.std == Approx(1.0).margin(0.02));

  CHECK_THROWS_AS((Normalize{0.5, 0.0}(raw)), ValueError);
  CHECK_THROWS_AS((Normalize{0.5, 1.0}(mnist(false).targets())), TypeError);
}

TEST_CASE("mnist: files are found under either spelling, raw or gzipped", "[mnist]") {
  TempDir dir;
  write_file(dir / "mnist/t10k-images.idx3-ubyte", idx_u8({3, 28, 28}));
  write_file(dir / "mnist/t10k-labels.idx1-ubyte.gz", gzip(concat(idx_header(0x08, {3}), {7, 0, 9})));
  const MNIST m(dir.path(), test_split());
  CHECK(m.size() == 3);
  CHECK(m.targets().data<std::int64_t>()[2] == 9);
  CHECK(m.data().data<float>()[1] == 1.0f / 255.0f);
}

TEST_CASE("mnist: inconsistent or malformed files are clear errors", "[mnist][errors]") {
  TempDir dir;
  const Bytes images = idx_u8({4, 28, 28});
  const Bytes labels = concat(idx_header(0x08, {4}), {1, 2, 3, 4});

  SECTION("a label outside 0..9") {
    write_split(dir, images, concat(idx_header(0x08, {4}), {1, 2, 10, 4}));
    CHECK_THROWS_AS(MNIST(dir.path(), test_split()), FormatError);
    CHECK_THROWS_WITH(MNIST(dir.path(), test_split()),
                      Contains("t10k-labels-idx1-ubyte") && Contains("label 2 is 10, expected 0..9"));
  }
  SECTION("image and label counts disagree") {
    write_split(dir, images, concat(idx_header(0x08, {3}), {1, 2, 3}));
    CHECK_THROWS_AS(MNIST(dir.path(), test_split()), FormatError);
    CHECK_THROWS_WITH(MNIST(dir.path(), test_split()), Contains("t10k-images-idx3-ubyte' holds 4 images") &&
                                                           Contains("t10k-labels-idx1-ubyte' holds 3 labels"));
  }
  SECTION("images that are not 28x28") {
    write_split(dir, idx_u8({4, 28, 27}), labels);
    CHECK_THROWS_WITH(MNIST(dir.path(), test_split()), Contains("dimension 2 is 27, expected 28"));
  }
  SECTION("labels and images swapped") {
    write_split(dir, labels, images);
    CHECK_THROWS_AS(MNIST(dir.path(), test_split()), FormatError);
    CHECK_THROWS_WITH(MNIST(dir.path(), test_split()), Contains("rank 1 (dims [4]), expected rank 3"));
  }
  SECTION("a truncated image file") {
    write_split(dir, Bytes(images.begin(), images.end() - 100), labels);
    CHECK_THROWS_WITH(MNIST(dir.path(), test_split()), Contains("t10k-images-idx3-ubyte") && Contains("truncated"));
  }
  SECTION("a missing file") {
    write_file(dir / "mnist/t10k-images-idx3-ubyte", images);
    CHECK_THROWS_AS(MNIST(dir.path(), test_split()), FileError);
    CHECK_THROWS_WITH(MNIST(dir.path(), test_split()), Contains("no t10k-labels-idx1-ubyte in") &&
                                                           Contains("t10k-labels.idx1-ubyte.gz") &&
                                                           Contains(".download = true"));
  }
  SECTION("a transform that drops rows") {
    write_split(dir, images, labels);
    MNISTOptions opts = test_split();
    opts.transform = [](const Tensor& x) { return alias_with_shape(x, Shape{x.numel()}).detach(); };
    const MNIST m(dir.path(), opts);  // applied per batch: the error comes with the first batch
    CHECK_THROWS_AS(m.get_batch(std::vector<std::int64_t>{0, 1}), ShapeError);
    CHECK_THROWS_WITH(m.get_batch(std::vector<std::int64_t>{0, 1}),
                      Contains("MNIST: the transform must return one row per image (2)"));
  }
}
