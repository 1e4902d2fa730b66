// amax, amin, argmax and argmin over a dim (and over everything): against naive loops,
// gradients shared among ties as PyTorch's, finite differences, accumulation, dtypes, misuse.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <tinynet/tinynet.hpp>
#include <vector>

#include "ops/op_testing.hpp"

using namespace tinynet;
using namespace tinynet::testing;

namespace {

/// Naive extremum along `dim`: the value (or the first index) of the largest (smallest) entry.
std::vector<double> extremum_reference(const Tensor& x, int dim, bool largest, bool index) {
  const Shape& s = x.shape();
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= s[d];
  for (int d = dim + 1; d < s.rank(); ++d) inner *= s[d];
  const auto v = all_values(x);
  std::vector<double> r;
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      std::int64_t best = 0;
      const auto at = [&](std::int64_t k) { return v[static_cast<std::size_t>((o * s[dim] + k) * inner + i)]; };
      for (std::int64_t k = 1; k < s[dim]; ++k)
        if (largest ? at(k) > at(best) : at(k) < at(best)) best = k;
      r.push_back(index ? static_cast<double>(best) : at(best));
    }
  return r;
}

Shape reduce_dim_shape(const Shape& s, int dim, bool keepdim) {
  Shape r;
  for (int d = 0; d < s.rank(); ++d) {
    if (d != dim)
      r.push_back(s[d]);
    else if (keepdim)
      r.push_back(1);
  }
  return r;
}

const Shape kExtremumShapes[] = {{3, 4, 5}, {1, 7}, {2, 1, 3}, {6}};

}  // namespace

TEST_CASE("amax, amin, argmax, argmin: match a naive loop over every dim", "[ops][reduce_dim]") {
  for (const DType dtype : {DType::float64, DType::float32, DType::int32, DType::int64})
    for (const auto& s : kExtremumShapes)
      for (int dim = 0; dim < s.rank(); ++dim)
        for (bool keepdim : {false, true}) {
          INFO(dtype << " " << s << " dim " << dim << " keepdim " << keepdim);
          Tensor x = random_input(s, 1, false, -5.0, 5.0);
          if (!is_floating(dtype)) x = tinynet::abs(x).to(dtype);  // integers: many ties
          x = x.to(dtype);
          const Shape out = reduce_dim_shape(s, dim, keepdim);
          for (const int d : {dim, dim - s.rank()}) {
            CHECK(amax(x, d, keepdim).shape() == out);
            CHECK(amax(x, d, keepdim).dtype() == dtype);
            CHECK(all_values(amax(x, d, keepdim)) == extremum_reference(x, dim, true, false));
            CHECK(all_values(amin(x, d, keepdim)) == extremum_reference(x, dim, false, false));
            CHECK(argmax(x, d, keepdim).dtype() == DType::int64);
            CHECK(argmax(x, d, keepdim).shape() == out);
            CHECK(all_values(argmax(x, d, keepdim)) == extremum_reference(x, dim, true, true));
            CHECK(all_values(argmin(x, d, keepdim)) == extremum_reference(x, dim, false, true));
          }
        }
  const Tensor x = random_input({3, 4}, 2, false);
  CHECK(amax(x).shape() == Shape{});
  CHECK(amax(x).item() == extremum_reference(x.flatten(), 0, true, false)[0]);
  CHECK(amin(x).item() == extremum_reference(x.flatten(), 0, false, false)[0]);
  CHECK(argmax(x).item<std::int64_t>() == static_cast<std::int64_t>(extremum_reference(x.flatten(), 0, true, true)[0]));
  CHECK(argmin(x).item<std::int64_t>() ==
        static_cast<std::int64_t>(extremum_reference(x.flatten(), 0, false, true)[0]));
}

TEST_CASE("amax, amin, argmax, argmin: ties, NaN, bool and bfloat16", "[ops][reduce_dim]") {
  const Tensor t = from_vector<double>({1, 3, 3, 2, 5, 5, 5, 0}, {2, 4});
  CHECK(all_values(argmax(t, 1)) == std::vector<double>{1, 0});
  CHECK(all_values(argmin(t, 1)) == std::vector<double>{0, 3});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor n = from_vector<double>({1, nan, 3, nan}, {4});
  CHECK(std::isnan(amax(n, 0).item()));
  CHECK(std::isnan(amin(n, 0).item()));
  CHECK(argmax(n, 0).item<std::int64_t>() == 1);  // the first NaN, as PyTorch
  CHECK(argmin(n, 0).item<std::int64_t>() == 1);
  const Tensor b = from_vector<bool>({false, true, false, false}, {2, 2});
  CHECK(amax(b, 1).dtype() == DType::bool_);
  CHECK(all_values(amax(b, 1)) == std::vector<double>{1, 0});
  CHECK(all_values(amin(b, 0)) == std::vector<double>{0, 0});
  const Tensor h = random_input({3, 5}, 3, false).to(DType::bfloat16);
  CHECK(amax(h, 1).dtype() == DType::bfloat16);
  CHECK(all_values(amax(h, 1)) == all_values(amax(h.to(DType::float32), 1)));
  CHECK(all_values(argmin(h, 0)) == all_values(argmin(h.to(DType::float32), 0)));
}

TEST_CASE("amax, amin: gradients match finite differences and accumulate", "[ops][reduce_dim][gradcheck]") {
  for (const auto& s : kExtremumShapes) {
    INFO(s);
    check_gradients([](std::span<const Tensor> in) { return amax(in[0]); }, {distinct_values(s, 4)});
    check_gradients([](std::span<const Tensor> in) { return amin(in[0]); }, {distinct_values(s, 5)});
    for (int dim = 0; dim < s.rank(); ++dim)
      for (bool keepdim : {false, true}) {
        INFO("dim " << dim << " keepdim " << keepdim);
        check_gradients([&](std::span<const Tensor> in) { return amax(in[0], dim, keepdim); }, {distinct_values(s, 6)});
        check_gradients([&](std::span<const Tensor> in) { return amin(in[0], dim, keepdim); }, {distinct_values(s, 7)});
      }
  }
  check_accumulates([](std::span<const Tensor> in) { return amax(in[0], 1); }, {distinct_values({3, 4}, 8)});
  check_accumulates([](std::span<const Tensor> in) { return amin(in[0], 0, true); }, {distinct_values({3, 4}, 9)});
  CHECK(std::string(amax(distinct_values({3}, 10), 0).grad_fn()->name()) == "amax");
  CHECK(std::string(amin(distinct_values({3}, 10)).grad_fn()->name()) == "amin");
}

TEST_CASE("amax, amin: the gradient is shared evenly among ties, as PyTorch's", "[ops][reduce_dim]") {
  const Tensor x = from_vector<double>({1, 3, 3, 2, 5, 5, 5, 0}, {2, 4}).requires_grad_();
  amax(x, 1).backward(from_vector<double>({6, 9}, {2}));
  CHECK(all_values(x.grad()) == std::vector<double>{0, 3, 3, 0, 3, 3, 3, 0});
  const Tensor y = from_vector<double>({2, 1, 1, 4}, {4}).requires_grad_();
  amin(y).backward();
  CHECK(all_values(y.grad()) == std::vector<double>{0, 0.5, 0.5, 0});
}

TEST_CASE("amax, amin, argmax, argmin: misuse names the op and the shape", "[ops][reduce_dim][errors]") {
  const Tensor x = zeros({2, 3});
  CHECK_THROWS_AS(amax(x, 2), IndexError);
  CHECK_THROWS_WITH(amax(x, 2), Catch::Contains("amax: dimension 2 out of range for shape [2, 3]"));
  CHECK_THROWS_WITH(amin(x, -3), Catch::Contains("amin: dimension -3 out of range for shape [2, 3]"));
  CHECK_THROWS_WITH(argmin(x, 4), Catch::Contains("argmin: dimension 4 out of range"));
  CHECK_THROWS_WITH(sum(x, 2), Catch::Contains("sum: dimension 2 out of range for shape [2, 3]"));
  CHECK_THROWS_AS(amax(zeros({3, 0}), 1), ValueError);
  CHECK_THROWS_WITH(amax(zeros({3, 0}), 1), Catch::Contains("amax: dimension 1 of shape [3, 0] is empty"));
  CHECK_THROWS_WITH(amin(zeros({0})), Catch::Contains("amin: the input of shape [0] is empty"));
  CHECK_THROWS_WITH(argmin(zeros({2, 0}), -1), Catch::Contains("argmin") && Catch::Contains("empty"));
  CHECK_THROWS_AS(argmax(zeros({2}, {.dtype = DType::bool_}), 0), TypeError);
  CHECK_THROWS_WITH(argmax(zeros({2}, {.dtype = DType::bool_}), 0),
                    Catch::Contains("argmax") && Catch::Contains("bool"));
}
