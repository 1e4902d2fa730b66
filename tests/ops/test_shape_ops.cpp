// unsqueeze, squeeze, contiguous (storage shared) and narrow, select, permute, transpose
// (copies): against naive index arithmetic, gradients by finite differences, accumulation,
// every dtype, misuse.
#include <catch2/catch.hpp>
#include <numeric>
#include <string>
#include <tinynet/tinynet.hpp>
#include <vector>

#include "ops/op_testing.hpp"

using namespace tinynet;
using namespace tinynet::testing;

namespace {

/// Coordinates of flat index i in shape s.
std::vector<std::int64_t> coords_of(std::int64_t i, const Shape& s) {
  std::vector<std::int64_t> c(static_cast<std::size_t>(s.rank()));
  for (int d = s.rank() - 1; d >= 0; --d) {
    c[static_cast<std::size_t>(d)] = i % s[d];
    i /= s[d];
  }
  return c;
}

/// Flat index of coordinates c in shape s.
std::int64_t flat_of(const std::vector<std::int64_t>& c, const Shape& s) {
  std::int64_t f = 0;
  for (int d = 0; d < s.rank(); ++d) f = f * s[d] + c[static_cast<std::size_t>(d)];
  return f;
}

/// Naive permute: out[c] = x[c'] with c'[dims[i]] = c[i].
std::vector<double> permute_reference(const Tensor& x, const std::vector<std::int64_t>& dims) {
  const Shape& s = x.shape();
  Shape out;
  for (std::int64_t d : dims) out.push_back(s[static_cast<int>(d)]);
  const auto v = all_values(x);
  std::vector<double> r;
  for (std::int64_t i = 0; i < out.numel(); ++i) {
    const auto c = coords_of(i, out);
    std::vector<std::int64_t> src(c.size());
    for (std::size_t k = 0; k < dims.size(); ++k) src[static_cast<std::size_t>(dims[k])] = c[k];
    r.push_back(v[static_cast<std::size_t>(flat_of(src, s))]);
  }
  return r;
}

/// Naive narrow.
std::vector<double> narrow_reference(const Tensor& x, int dim, std::int64_t start, std::int64_t length) {
  Shape out = x.shape();
  out[dim] = length;
  const auto v = all_values(x);
  std::vector<double> r;
  for (std::int64_t i = 0; i < out.numel(); ++i) {
    auto c = coords_of(i, out);
    c[static_cast<std::size_t>(dim)] += start;
    r.push_back(v[static_cast<std::size_t>(flat_of(c, x.shape()))]);
  }
  return r;
}

const std::vector<std::vector<std::int64_t>> kPermutations = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                                              {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};

}  // namespace

TEST_CASE("unsqueeze, squeeze, contiguous: new shapes over the same storage", "[ops][shape]") {
  const Tensor x = random_input({2, 1, 3}, 1, false);
  CHECK(x.unsqueeze(0).shape() == Shape{1, 2, 1, 3});
  CHECK(x.unsqueeze(3).shape() == Shape{2, 1, 3, 1});
  CHECK(x.unsqueeze(-1).shape() == Shape{2, 1, 3, 1});
  CHECK(x.unsqueeze(-4).shape() == Shape{1, 2, 1, 3});
  CHECK(unsqueeze(x, 2).shape() == Shape{2, 1, 1, 3});
  CHECK(x.squeeze(1).shape() == Shape{2, 3});
  CHECK(x.squeeze(-2).shape() == Shape{2, 3});
  CHECK(x.squeeze(0).shape() == Shape{2, 1, 3});  // extent 2: unchanged, as PyTorch
  CHECK(squeeze(x, 1).shape() == Shape{2, 3});
  CHECK(random_input({1, 3, 1, 1}, 2, false).squeeze().shape() == Shape{3});
  CHECK(x.unsqueeze(1).shares_storage(x));
  CHECK(x.squeeze().shares_storage(x));
  CHECK(x.contiguous().is_same(x));
  CHECK(x.is_contiguous());
  CHECK(all_values(x.unsqueeze(0)) == all_values(x));
  check_gradients([](std::span<const Tensor> in) { return in[0].unsqueeze(1) * 2.0; }, {random_input({2, 3}, 3)});
  check_gradients([](std::span<const Tensor> in) { return in[0].squeeze(1) * 2.0; }, {random_input({2, 1, 3}, 4)});
  check_accumulates([](std::span<const Tensor> in) { return in[0].squeeze(); }, {random_input({2, 1, 3}, 5)});
  const Tensor labels = tensor<std::int64_t>({1, 2});
  CHECK(labels.unsqueeze(1).shape() == Shape{2, 1});
}

TEST_CASE("permute, transpose: match naive index arithmetic, every dtype", "[ops][shape]") {
  for (const DType dtype : {DType::float64, DType::float32, DType::int64, DType::int32, DType::bool_, DType::bfloat16})
    for (const auto& p : kPermutations) {
      INFO(dtype << " permutation " << p[0] << p[1] << p[2]);
      const Tensor x = random_input({2, 3, 4}, 6, false, -4, 4).to(dtype);
      const Tensor y = x.permute({p[0], p[1], p[2]});
      CHECK(y.dtype() == dtype);
      CHECK(y.shape() ==
            Shape{x.size(static_cast<int>(p[0])), x.size(static_cast<int>(p[1])), x.size(static_cast<int>(p[2]))});
      CHECK(all_values(y) == permute_reference(x, p));
      CHECK_FALSE(y.shares_storage(x));
      CHECK(all_values(x.permute(std::span<const std::int64_t>(p))) == all_values(y));
    }
  const Tensor x = random_input({2, 3, 4}, 7, false);
  CHECK(all_values(x.transpose(0, 2)) == permute_reference(x, {2, 1, 0}));
  CHECK(all_values(x.transpose(-1, 1)) == permute_reference(x, {0, 2, 1}));
  CHECK(all_values(transpose(x, 1, 1)) == all_values(x));
  CHECK(all_values(permute(x, {-1, 0, 1})) == permute_reference(x, {2, 0, 1}));
  const Tensor m = random_input({3, 5}, 8, false);
  CHECK(all_values(m.transpose(0, 1).transpose(0, 1)) == all_values(m));
}

TEST_CASE("narrow, select: match naive index arithmetic", "[ops][shape]") {
  const Tensor x = random_input({4, 5, 3}, 9, false);
  for (int dim = 0; dim < 3; ++dim)
    for (std::int64_t start = 0; start < x.size(dim); ++start)
      for (std::int64_t length = 0; start + length <= x.size(dim); ++length) {
        INFO("dim " << dim << " start " << start << " length " << length);
        const Tensor y = x.narrow(dim, start, length);
        Shape expected = x.shape();
        expected[dim] = length;
        CHECK(y.shape() == expected);
        CHECK(all_values(y) == narrow_reference(x, dim, start, length));
        CHECK(all_values(x.narrow(dim - 3, start - x.size(dim), length)) == all_values(y));  // negative dim, start
      }
  for (int dim = 0; dim < 3; ++dim)
    for (std::int64_t i = 0; i < x.size(dim); ++i) {
      INFO("dim " << dim << " index " << i);
      const Tensor y = x.select(dim, i);
      CHECK(y.dim() == 2);
      CHECK(all_values(y) == narrow_reference(x, dim, i, 1));
      CHECK(all_values(select(x, dim, i - x.size(dim))) == all_values(y));
    }
  const Tensor labels = tensor<std::int64_t>({5, 6, 7, 8});
  CHECK(all_values(labels.narrow(0, 1, 2)) == std::vector<double>{6, 7});
  CHECK(labels.select(0, -1).item<std::int64_t>() == 8);
  CHECK(labels.select(0, 0).shape() == Shape{});
}

TEST_CASE("narrow, select, permute, transpose: gradients and accumulation", "[ops][shape][gradcheck]") {
  for (const auto& p : kPermutations) {
    INFO("permutation " << p[0] << p[1] << p[2]);
    check_gradients(
        [&](std::span<const Tensor> in) {
          return in[0].permute({p[0], p[1], p[2]});
        },
        {random_input({2, 3, 4}, 10)});
  }
  check_gradients([](std::span<const Tensor> in) { return in[0].transpose(0, 1); }, {random_input({3, 4}, 11)});
  for (int dim = 0; dim < 3; ++dim) {
    INFO("dim " << dim);
    check_gradients([&](std::span<const Tensor> in) { return in[0].narrow(dim, 1, 2); }, {random_input({3, 4, 5}, 12)});
    check_gradients([&](std::span<const Tensor> in) { return in[0].select(dim, 2); }, {random_input({3, 4, 5}, 13)});
  }
  // The rows narrow does not read get a zero gradient, also when the gradient was there before.
  check_accumulates([](std::span<const Tensor> in) { return in[0].narrow(1, 1, 2); }, {random_input({3, 4}, 14)});
  check_accumulates([](std::span<const Tensor> in) { return in[0].select(0, 1); }, {random_input({3, 4}, 15)});
  check_accumulates([](std::span<const Tensor> in) { return in[0].permute({1, 0}); }, {random_input({3, 4}, 16)});
  // Two narrows of one tensor: each part gets its own gradient.
  check_gradients([](std::span<const Tensor> in) { return in[0].narrow(0, 0, 2) * in[0].narrow(0, 1, 2); },
                  {random_input({3, 4}, 17)});
  const Tensor x = random_input({3, 4}, 18);
  x.narrow(0, 1, 1).backward(ones({1, 4}, {.dtype = DType::float64}));
  CHECK(all_values(x.grad()) == std::vector<double>{0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0});
  CHECK(std::string(x.narrow(0, 0, 1).grad_fn()->name()) == "narrow");
  CHECK(std::string(x.select(0, 0).grad_fn()->name()) == "select");
  CHECK(std::string(x.transpose(0, 1).grad_fn()->name()) == "transpose");
  CHECK(std::string(x.permute({1, 0}).grad_fn()->name()) == "permute");
}

TEST_CASE("shape ops: misuse names the op and the shape", "[ops][shape][errors]") {
  const Tensor x = zeros({2, 3});
  CHECK_THROWS_AS(x.unsqueeze(3), IndexError);
  CHECK_THROWS_WITH(x.unsqueeze(3), Catch::Contains("unsqueeze: dimension 3 out of range for shape [2, 3]"));
  CHECK_THROWS_WITH(x.squeeze(2), Catch::Contains("squeeze: dimension 2 out of range for shape [2, 3]"));
  CHECK_THROWS_AS(x.narrow(1, 2, 2), IndexError);
  CHECK_THROWS_WITH(x.narrow(1, 2, 2),
                    Catch::Contains("narrow: start 2 and length 2 do not fit in dimension 1 of shape [2, 3]"));
  CHECK_THROWS_WITH(x.narrow(5, 0, 1), Catch::Contains("narrow: dimension 5 out of range for shape [2, 3]"));
  CHECK_THROWS_AS(x.select(0, 2), IndexError);
  CHECK_THROWS_WITH(x.select(0, -3),
                    Catch::Contains("select: index -3 is out of range for dimension 0 of shape [2, 3]"));
  CHECK_THROWS_AS(x.permute({0}), ShapeError);
  CHECK_THROWS_WITH(x.permute({0}), Catch::Contains("permute: 1 dims given for shape [2, 3] of rank 2"));
  CHECK_THROWS_WITH(x.permute({1, -1}), Catch::Contains("permute: dim -1 appears twice") && Catch::Contains("[2, 3]"));
  CHECK_THROWS_WITH(x.permute({0, 2}), Catch::Contains("permute: dimension 2 out of range for shape [2, 3]"));
  CHECK_THROWS_WITH(x.transpose(0, 2), Catch::Contains("transpose: dimension 2 out of range for shape [2, 3]"));
  CHECK_THROWS_AS(zeros({1, 1, 1, 1, 1, 1}).unsqueeze(0), ShapeError);
}
