// where(cond, a, b): against a naive broadcasting loop, gradients by finite differences,
// accumulation, dtypes and misuse.
#include <catch2/catch.hpp>
#include <string>
#include <tinynet/tinynet.hpp>
#include <vector>

#include "ops/op_testing.hpp"

using namespace tinynet;
using namespace tinynet::testing;

namespace {

/// Offset into `in` of flat element i of `out`, `in` broadcast to `out`.
std::int64_t where_source(std::int64_t i, const Shape& out, const Shape& in) {
  std::int64_t offset = 0, stride = 1;
  for (int d = out.rank() - 1; d >= 0; --d) {
    const std::int64_t coord = i % out[d];
    i /= out[d];
    const int di = d - (out.rank() - in.rank());
    if (di < 0) continue;
    if (in[di] != 1) offset += coord * stride;
    stride *= in[di];
  }
  return offset;
}

std::vector<double> where_reference(const Tensor& c, const Tensor& a, const Tensor& b, const Shape& out) {
  const auto vc = all_values(c), va = all_values(a), vb = all_values(b);
  std::vector<double> r;
  for (std::int64_t i = 0; i < out.numel(); ++i)
    r.push_back(vc[static_cast<std::size_t>(where_source(i, out, c.shape()))] != 0
                    ? va[static_cast<std::size_t>(where_source(i, out, a.shape()))]
                    : vb[static_cast<std::size_t>(where_source(i, out, b.shape()))]);
  return r;
}

struct WhereShapes {
  Shape c, a, b, out;
};

const WhereShapes kWhereShapes[] = {
    {{3, 4}, {3, 4}, {3, 4}, {3, 4}},    {{3, 1}, {1, 4}, {3, 4}, {3, 4}}, {{2, 3, 4}, {4}, {}, {2, 3, 4}},
    {{4}, {2, 3, 1}, {3, 4}, {2, 3, 4}}, {{}, {2, 2}, {2, 2}, {2, 2}},     {{1, 3, 1}, {2, 1, 5}, {1, 1, 5}, {2, 3, 5}},
};

Tensor random_mask(const Shape& s, std::uint64_t seed) { return random_input(s, seed, false) > 0.0; }

}  // namespace

TEST_CASE("where: matches a naive loop, the three operands broadcast", "[ops][where]") {
  for (const auto& s : kWhereShapes) {
    INFO(s.c << " " << s.a << " " << s.b);
    const Tensor c = random_mask(s.c, 1), a = random_input(s.a, 2, false), b = random_input(s.b, 3, false);
    const Tensor y = where(c, a, b);
    CHECK(y.shape() == s.out);
    CHECK(y.dtype() == DType::float64);
    CHECK(all_values(y) == where_reference(c, a, b, s.out));
  }
}

TEST_CASE("where: gradients match finite differences and accumulate", "[ops][where][gradcheck]") {
  for (const auto& s : kWhereShapes) {
    INFO(s.c << " " << s.a << " " << s.b);
    const Tensor c = random_mask(s.c, 4);
    const auto fn = [&](std::span<const Tensor> in) { return where(c, in[0], in[1]); };
    check_gradients(fn, {random_input(s.a, 5), random_input(s.b, 6)});
    check_gradients(fn, {random_input(s.a, 7), random_input(s.b, 8, false)});
    check_accumulates(fn, {random_input(s.a, 9), random_input(s.b, 10)});
  }
  // A tensor on both sides gets both parts.
  const Tensor c = random_mask({5}, 11);
  check_gradients([&](std::span<const Tensor> in) { return where(c, in[0], in[0] * 2.0); }, {random_input({5}, 12)});
  // Scalars.
  check_gradients([&](std::span<const Tensor> in) { return where(c, in[0], 0.5); }, {random_input({5}, 13)});
  check_gradients([&](std::span<const Tensor> in) { return where(c, -1.0, in[0]); }, {random_input({5}, 14)});
  const Tensor x = from_vector<double>({1, -2, 3}, {3});
  CHECK(all_values(where(x > 0.0, x, 0.0)) == std::vector<double>{1, 0, 3});
  CHECK(all_values(where(x > 0.0, 7.0, x)) == std::vector<double>{7, -2, 7});
  CHECK(std::string(where(x > 0.0, random_input({3}, 15), x).grad_fn()->name()) == "where");
}

TEST_CASE("where: dtypes promote, integers and bool select too", "[ops][where]") {
  const Tensor c = from_vector<bool>({true, false, true}, {3});
  const Tensor i = tensor<std::int64_t>({1, 2, 3}), f = tensor<float>({0.5f, 0.25f, 0.125f});
  const Tensor mixed = where(c, i, f);
  CHECK(mixed.dtype() == DType::float32);
  CHECK(all_values(mixed) == std::vector<double>{1, 0.25, 3});
  const Tensor ints = where(c, i, tensor<std::int64_t>({-1, -2, -3}));
  CHECK(ints.dtype() == DType::int64);
  CHECK(all_values(ints) == std::vector<double>{1, -2, 3});
  CHECK(all_values(where(c, c, tensor<bool>({true, true, false}))) == std::vector<double>{1, 1, 1});
  const Tensor h = where(c, f.to(DType::bfloat16), 2.0);
  CHECK(h.dtype() == DType::bfloat16);
  CHECK(all_values(h) == std::vector<double>{0.5, 2, 0.125});
  // float32 beside float64: float64, and the float32 input's gradient comes back float32.
  const Tensor a = random_input({3}, 16).to(DType::float32).requires_grad_();
  const Tensor b = random_input({3}, 17);
  Tensor y = where(c, a, b);
  CHECK(y.dtype() == DType::float64);
  sum(y).backward();
  CHECK(a.grad().dtype() == DType::float32);
  CHECK(all_values(a.grad()) == std::vector<double>{1, 0, 1});
  CHECK(all_values(b.grad()) == std::vector<double>{0, 1, 0});
}

TEST_CASE("where: misuse names the op and the shapes or dtype", "[ops][where][errors]") {
  const Tensor x = zeros({2, 3});
  CHECK_THROWS_AS(where(x, x, x), TypeError);
  CHECK_THROWS_WITH(where(x, x, x), Catch::Contains("where: condition must be a bool tensor, got float32"));
  CHECK_THROWS_AS(where(x > 0.0, x, zeros({4})), ShapeError);
  CHECK_THROWS_WITH(where(x > 0.0, x, zeros({4})), Catch::Contains("where: shapes [2, 3] and [4]"));
  CHECK_THROWS_WITH(where(zeros({5}) > 0.0, x, x), Catch::Contains("where: shapes [5] and [2, 3]"));
  CHECK_THROWS_WITH(where(x > 0.0, Tensor(), x), Catch::Contains("where") && Catch::Contains("undefined"));
}
