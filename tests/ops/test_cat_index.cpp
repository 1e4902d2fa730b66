// cat, stack and index_select: against naive loops, gradients by finite differences,
// accumulation, every dtype, misuse.
#include <catch2/catch.hpp>
#include <string>
#include <tinynet/tinynet.hpp>
#include <vector>

#include "ops/op_testing.hpp"

using namespace tinynet;
using namespace tinynet::testing;

namespace {

/// Naive cat of tensors of equal shape but along `dim`: out[o, k, i] walks the parts in order.
std::vector<double> cat_reference(const std::vector<Tensor>& parts, int dim) {
  const Shape& s = parts[0].shape();
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= s[d];
  for (int d = dim + 1; d < s.rank(); ++d) inner *= s[d];
  std::vector<double> r;
  for (std::int64_t o = 0; o < outer; ++o)
    for (const Tensor& p : parts) {
      const auto v = all_values(p);
      const std::int64_t n = p.shape()[dim];
      for (std::int64_t j = 0; j < n * inner; ++j) r.push_back(v[static_cast<std::size_t>(o * n * inner + j)]);
    }
  return r;
}

/// Naive index_select.
std::vector<double> index_select_reference(const Tensor& x, int dim, const std::vector<std::int64_t>& index) {
  const Shape& s = x.shape();
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= s[d];
  for (int d = dim + 1; d < s.rank(); ++d) inner *= s[d];
  const auto v = all_values(x);
  std::vector<double> r;
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t k : index)
      for (std::int64_t i = 0; i < inner; ++i) r.push_back(v[static_cast<std::size_t>((o * s[dim] + k) * inner + i)]);
  return r;
}

}  // namespace

TEST_CASE("cat: matches a naive loop along every dim, every dtype", "[ops][cat]") {
  for (const DType dtype : {DType::float64, DType::float32, DType::int64, DType::bool_, DType::bfloat16})
    for (int dim = 0; dim < 3; ++dim) {
      INFO(dtype << " dim " << dim);
      Shape a{2, 3, 4}, b{2, 3, 4}, c{2, 3, 4};
      a[dim] = 1;
      c[dim] = 3;
      const std::vector<Tensor> parts = {random_input(a, 1, false, -3, 3).to(dtype),
                                         random_input(b, 2, false, -3, 3).to(dtype),
                                         random_input(c, 3, false, -3, 3).to(dtype)};
      const Tensor y = cat(parts, dim);
      Shape expected{2, 3, 4};
      expected[dim] = a[dim] + b[dim] + c[dim];
      CHECK(y.shape() == expected);
      CHECK(y.dtype() == dtype);
      CHECK(all_values(y) == cat_reference(parts, dim));
      CHECK(all_values(cat(parts, dim - 3)) == all_values(y));
    }
  const Tensor one = random_input({2, 2}, 4, false);
  CHECK(all_values(cat({one}, 1)) == all_values(one));
  CHECK(cat({one, zeros({0, 2}, {.dtype = DType::float64})}).shape() == Shape{2, 2});
}

TEST_CASE("stack: a new dim, as cat of unsqueezed tensors", "[ops][cat]") {
  const Tensor a = random_input({2, 3}, 5, false), b = random_input({2, 3}, 6, false);
  CHECK(stack({a, b}).shape() == Shape{2, 2, 3});
  CHECK(stack({a, b}, 1).shape() == Shape{2, 2, 3});
  CHECK(stack({a, b}, 2).shape() == Shape{2, 3, 2});
  CHECK(stack({a, b}, -1).shape() == Shape{2, 3, 2});
  CHECK(all_values(stack({a, b}, 0)) == cat_reference({a, b}, 0));
  CHECK(all_values(stack({a, b}, 2)) == cat_reference({a.unsqueeze(2), b.unsqueeze(2)}, 2));
  const std::vector<Tensor> labels = {tensor<std::int64_t>({1, 2}), tensor<std::int64_t>({3, 4})};
  CHECK(all_values(stack(labels, 1)) == std::vector<double>{1, 3, 2, 4});
}

TEST_CASE("cat, stack: gradients and accumulation", "[ops][cat][gradcheck]") {
  for (int dim = 0; dim < 3; ++dim) {
    INFO("dim " << dim);
    Shape a{2, 3, 4}, b{2, 3, 4};
    b[dim] = 2;
    check_gradients([&](std::span<const Tensor> in) { return cat(in, dim); },
                    {random_input(a, 7), random_input(b, 8), random_input(a, 9)});
    check_gradients(
        [&](std::span<const Tensor> in) {
          return cat({in[0], in[1]}, dim);
        },
        {random_input(a, 10), random_input(b, 11, false)});
    check_gradients([&](std::span<const Tensor> in) { return stack(in, dim); },
                    {random_input(a, 12), random_input(a, 13)});
    check_accumulates([&](std::span<const Tensor> in) { return cat(in, dim); },
                      {random_input(a, 14), random_input(b, 15)});
  }
  // One tensor twice: both slices come back to it.
  check_gradients(
      [](std::span<const Tensor> in) {
        return cat({in[0], in[0] * 3.0, in[0]}, 1);
      },
      {random_input({2, 3}, 16)});
  const Tensor x = random_input({2, 3}, 17);
  cat({x, x}, 0).backward(ones({4, 3}, {.dtype = DType::float64}));
  CHECK(all_values(x.grad()) == std::vector<double>(6, 2.0));
  CHECK(std::string(cat({x, x}).grad_fn()->name()) == "cat");
}

TEST_CASE("index_select: matches a naive loop, repeats included, every dtype", "[ops][index_select]") {
  const std::vector<std::int64_t> index = {2, 0, 2, 1};
  for (const DType dtype : {DType::float64, DType::float32, DType::int64, DType::bool_, DType::bfloat16})
    for (int dim = 0; dim < 3; ++dim) {
      INFO(dtype << " dim " << dim);
      const Tensor x = random_input({3, 4, 5}, 18, false, -3, 3).to(dtype);
      const Tensor y = index_select(x, dim, from_vector(index, {4}));
      Shape expected = x.shape();
      expected[dim] = 4;
      CHECK(y.shape() == expected);
      CHECK(y.dtype() == dtype);
      CHECK(all_values(y) == index_select_reference(x, dim, index));
      CHECK(all_values(index_select(x, dim - 3, from_vector(index, {4}).to(DType::int32))) == all_values(y));
    }
  const Tensor x = random_input({3, 2}, 19, false);
  CHECK(index_select(x, 0, zeros({0}, {.dtype = DType::int64})).shape() == Shape{0, 2});
  CHECK(all_values(index_select(x, 0, scalar_tensor(1, {.dtype = DType::int64}))) == index_select_reference(x, 0, {1}));
}

TEST_CASE("index_select: gradients add up over repeats, and accumulate", "[ops][index_select][gradcheck]") {
  const Tensor index = tensor<std::int64_t>({2, 0, 2, 2});
  for (int dim = 0; dim < 3; ++dim) {
    INFO("dim " << dim);
    check_gradients([&](std::span<const Tensor> in) { return index_select(in[0], dim, index); },
                    {random_input({3, 4, 3}, 20)});
    check_accumulates([&](std::span<const Tensor> in) { return index_select(in[0], dim, index); },
                      {random_input({3, 4, 3}, 21)});
  }
  const Tensor x = random_input({3}, 22);
  index_select(x, 0, index).backward(ones({4}, {.dtype = DType::float64}));
  CHECK(all_values(x.grad()) == std::vector<double>{1, 0, 3});
  CHECK(std::string(index_select(x, 0, index).grad_fn()->name()) == "index_select");
}

TEST_CASE("cat: mixed dtypes promote as PyTorch's; each gradient comes back in its input's dtype", "[ops][cat]") {
  const Tensor a = tensor<float>({1.5f, -2.f}, {.requires_grad = true});
  const Tensor b = tensor<double>({0.25}, {.requires_grad = true});
  const Tensor i = tensor<std::int64_t>({7});
  const Tensor y = cat({a, b, i});
  REQUIRE(y.dtype() == DType::float64);
  CHECK(y.data<double>()[0] == 1.5);
  CHECK(y.data<double>()[3] == 7.0);
  CHECK(cat({i, tensor<bool>({true})}).dtype() == DType::int64);
  sum(y * tensor<double>({1.0, 2.0, 3.0, 4.0})).backward();
  REQUIRE(a.grad().dtype() == DType::float32);
  CHECK(a.grad().data<float>()[1] == 2.f);
  CHECK(b.grad().data<double>()[0] == 3.0);
}

TEST_CASE("cat, stack, index_select: misuse names the op and both shapes", "[ops][cat][index_select][errors]") {
  const Tensor a = zeros({2, 3}), b = zeros({2, 4});
  CHECK_THROWS_AS(cat({a, b}, 0), ShapeError);
  CHECK_THROWS_WITH(cat({a, b}, 0), Catch::Contains("cat: tensor 1 has shape [2, 4] but tensor 0 has shape [2, 3]"));
  CHECK_THROWS_WITH(cat({a, zeros({2, 3, 1})}, 1), Catch::Contains("cat: tensor 1 has shape [2, 3, 1]"));
  CHECK(cat({a, b}, 1).shape() == Shape{2, 7});
  CHECK_THROWS_AS(cat({a, b}, 2), IndexError);
  CHECK_THROWS_WITH(cat({a, b}, 2), Catch::Contains("cat: dimension 2 out of range for shape [2, 3]"));
  CHECK_THROWS_AS(cat(std::span<const Tensor>()), ValueError);
  CHECK_THROWS_WITH(cat(std::span<const Tensor>()), Catch::Contains("cat: expected a non-empty list"));
  CHECK_THROWS_AS(stack({a, b}), ShapeError);
  CHECK_THROWS_WITH(stack({a, b}), Catch::Contains("stack: tensor 1 has shape [2, 4] but tensor 0 has shape [2, 3]"));
  CHECK_THROWS_WITH(stack({a, a}, 3), Catch::Contains("stack: dimension 3 out of range for shape [2, 3]"));
  const Tensor idx = tensor<std::int64_t>({0, 3});
  CHECK_THROWS_AS(index_select(a, 1, idx), IndexError);
  CHECK_THROWS_WITH(index_select(a, 1, idx),
                    Catch::Contains("index_select: index 3 at position 1 is out of range for a dimension of size 3"));
  CHECK_THROWS_WITH(index_select(a, 0, tensor<std::int64_t>({-1})), Catch::Contains("index_select: index -1"));
  CHECK_THROWS_WITH(index_select(a, 2, idx),
                    Catch::Contains("index_select: dimension 2 out of range for shape [2, 3]"));
  CHECK_THROWS_AS(index_select(a, 0, tensor<float>({0.f})), TypeError);
  CHECK_THROWS_WITH(index_select(a, 0, tensor<float>({0.f})),
                    Catch::Contains("index_select: index must be an int64 or int32 tensor, got float32"));
  CHECK_THROWS_WITH(index_select(a, 0, zeros({1, 1}, {.dtype = DType::int64})),
                    Catch::Contains("index_select: index must be 1-d, got shape [1, 1]"));
}
