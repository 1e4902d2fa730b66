// The bool dtype, the comparisons (eq, ne, lt, le, gt, ge and their operators) and the sums
// that count: against naive loops, over every dtype that compares.
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

/// The multi-index of flat element i of `out`, read from `in` broadcast to it.
std::int64_t compare_source(std::int64_t i, const Shape& out, const Shape& in) {
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

struct CompareCase {
  const char* name;
  Tensor (*op)(const Tensor&, const Tensor&);
  bool (*ref)(double, double);
};

const CompareCase kComparisons[] = {
    {"eq", eq, [](double a, double b) { return a == b; }}, {"ne", ne, [](double a, double b) { return a != b; }},
    {"lt", lt, [](double a, double b) { return a < b; }},  {"le", le, [](double a, double b) { return a <= b; }},
    {"gt", gt, [](double a, double b) { return a > b; }},  {"ge", ge, [](double a, double b) { return a >= b; }},
};

/// Small integers (many ties) of `dtype`, from a fixed seed.
Tensor small_ints(const Shape& s, std::uint64_t seed, DType dtype) {
  Tensor t = random_input(s, seed, false, -2.0, 3.0);
  for (double& v : std::span<double>(t.data<double>(), static_cast<std::size_t>(t.numel()))) v = std::floor(v);
  if (dtype == DType::bool_) t = add(t, 0.0) > 0.0;
  return t.to(dtype);
}

std::vector<double> compare_reference(const Tensor& a, const Tensor& b, const Shape& out, bool (*ref)(double, double)) {
  const auto va = all_values(a), vb = all_values(b);
  std::vector<double> r;
  for (std::int64_t i = 0; i < out.numel(); ++i)
    r.push_back(ref(va[static_cast<std::size_t>(compare_source(i, out, a.shape()))],
                    vb[static_cast<std::size_t>(compare_source(i, out, b.shape()))]));
  return r;
}

}  // namespace

TEST_CASE("bool dtype: size, name, conversions and printing", "[ops][compare]") {
  STATIC_REQUIRE(element_size(DType::bool_) == 1);
  STATIC_REQUIRE(dtype_of<bool>() == DType::bool_);
  CHECK(std::string(dtype_name(DType::bool_)) == "bool");
  CHECK(static_cast<int>(DType::bool_) == 5);  // appended: the other values never change

  const Tensor b = from_vector<bool>({true, false, true, true}, {2, 2});
  CHECK(b.dtype() == DType::bool_);
  CHECK(b.nbytes() == 4);
  CHECK(b.at<bool>({1, 0}));
  CHECK_FALSE(b.at<bool>({0, 1}));
  CHECK(b.str() == "Tensor(shape=[2, 2], dtype=bool, device=cpu, values=[true, false, true, true])");
  CHECK(tensor<bool>({false, true}).str() == "Tensor(shape=[2], dtype=bool, device=cpu, values=[false, true])");

  // To numbers: 0 and 1. From numbers: nonzero (NaN too) is true, as PyTorch's .to(torch.bool).
  CHECK(all_values(b) == std::vector<double>{1, 0, 1, 1});
  CHECK(values(b.to(DType::float32)) == std::vector<double>{1, 0, 1, 1});
  CHECK(b.to(DType::int64).data<std::int64_t>()[2] == 1);
  CHECK(static_cast<float>(b.to(DType::bfloat16).data<bfloat16>()[0]) == 1.0f);
  const Tensor f = from_vector<double>({0.0, -0.0, 0.5, -3.0, std::numeric_limits<double>::quiet_NaN()}, {5});
  CHECK(all_values(f.to(DType::bool_)) == std::vector<double>{0, 0, 1, 1, 1});
  CHECK(all_values(tensor<std::int64_t>({0, 7}).to(DType::bool_)) == std::vector<double>{0, 1});
  CHECK(all_values(tensor<float>({0.f, 0.25f}).to(DType::bfloat16).to(DType::bool_)) == std::vector<double>{0, 1});

  const Tensor t = full({3}, 1.0, {.dtype = DType::bool_});
  CHECK(all_values(t) == std::vector<double>{1, 1, 1});
  CHECK(zeros({1}, {.dtype = DType::bool_}).item<bool>() == false);
  CHECK(full({1}, 2.0, {.dtype = DType::bool_}).item<int>() == 1);
  CHECK(all_values(t.clone()) == all_values(t));
  CHECK_THROWS_AS(zeros({2}, {.dtype = DType::bool_, .requires_grad = true}), TypeError);
}

TEST_CASE("compare: eq ne lt le gt ge match a naive loop for every dtype and broadcast", "[ops][compare]") {
  struct Shapes {
    Shape a, b, out;
  };
  const Shapes shapes[] = {{{3, 4}, {3, 4}, {3, 4}},
                           {{2, 3, 5}, {5}, {2, 3, 5}},
                           {{3, 1}, {1, 5}, {3, 5}},
                           {{2, 3}, {}, {2, 3}},
                           {{}, {4}, {4}}};
  for (const DType dtype : {DType::float32, DType::float64, DType::int32, DType::int64, DType::bool_})
    for (const auto& s : shapes)
      for (const auto& c : kComparisons) {
        INFO(c.name << " " << dtype << " " << s.a << " vs " << s.b);
        const Tensor a = small_ints(s.a, 1, dtype), b = small_ints(s.b, 2, dtype);
        const Tensor y = c.op(a, b);
        CHECK(y.dtype() == DType::bool_);
        CHECK(y.shape() == s.out);
        CHECK_FALSE(y.requires_grad());
        CHECK(all_values(y) == compare_reference(a, b, s.out, c.ref));
      }
}

TEST_CASE("compare: operators and scalars", "[ops][compare]") {
  const Tensor x = from_vector<float>({-1.f, 0.f, 0.5f, 2.f}, {4});
  const Tensor y = from_vector<float>({-1.f, 1.f, 0.5f, 1.f}, {4});
  CHECK(all_values(x == y) == std::vector<double>{1, 0, 1, 0});
  CHECK(all_values(x != y) == std::vector<double>{0, 1, 0, 1});
  CHECK(all_values(x < y) == std::vector<double>{0, 1, 0, 0});
  CHECK(all_values(x <= y) == std::vector<double>{1, 1, 1, 0});
  CHECK(all_values(x > y) == std::vector<double>{0, 0, 0, 1});
  CHECK(all_values(x >= y) == std::vector<double>{1, 0, 1, 1});
  CHECK(all_values(x == 0.5) == std::vector<double>{0, 0, 1, 0});
  CHECK(all_values(x != 0.5) == std::vector<double>{1, 1, 0, 1});
  CHECK(all_values(x > 0) == std::vector<double>{0, 0, 1, 1});
  CHECK(all_values(0 < x) == std::vector<double>{0, 0, 1, 1});
  CHECK(all_values(0.5 >= x) == std::vector<double>{1, 1, 1, 0});
  CHECK(all_values(0.5 == x) == std::vector<double>{0, 0, 1, 0});
  CHECK(all_values(le(x, 0.0)) == std::vector<double>{1, 1, 0, 0});
  CHECK(all_values(ge(x, 0.0)) == std::vector<double>{0, 1, 1, 1});
  CHECK(all_values(lt(x, 0.0)) == std::vector<double>{1, 0, 0, 0});
  CHECK(all_values(gt(x, 0.0)) == std::vector<double>{0, 0, 1, 1});
  // A float32 tensor compares with a scalar in float32, as PyTorch: 0.1f == 0.1.
  CHECK(eq(full({1}, 0.1), 0.1).item<bool>());
  // An integer tensor and a fractional scalar compare in float32; an integral one in int64.
  const Tensor i = tensor<std::int64_t>({2, 3, (std::int64_t{1} << 53) + 1});
  CHECK(all_values(i == 2.5) == std::vector<double>{0, 0, 0});
  CHECK(all_values(i < 2.5) == std::vector<double>{1, 0, 0});
  CHECK(all_values(i == static_cast<double>(std::int64_t{1} << 53)) == std::vector<double>{0, 0, 0});
  CHECK(all_values(i == 3) == std::vector<double>{0, 1, 0});
  CHECK(all_values(tensor<bool>({true, false}) == 1) == std::vector<double>{1, 0});
}

TEST_CASE("compare: NaN, mixed dtypes and bfloat16", "[ops][compare]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor a = from_vector<double>({nan, 1.0, nan}, {3}), b = from_vector<double>({nan, nan, 1.0}, {3});
  CHECK(all_values(eq(a, b)) == std::vector<double>{0, 0, 0});
  CHECK(all_values(ne(a, b)) == std::vector<double>{1, 1, 1});
  for (const auto& c : kComparisons)
    if (std::string(c.name) != "eq" && std::string(c.name) != "ne")
      CHECK(all_values(c.op(a, b)) == std::vector<double>{0, 0, 0});
  CHECK(all_values(eq(a, a)) == std::vector<double>{0, 1, 0});

  // int64 against float32: compared in float32 (promote_types), whichever side each is on.
  const Tensor labels = tensor<std::int64_t>({0, 1, 2}), f = tensor<float>({0.f, 1.5f, 2.f});
  CHECK(all_values(eq(labels, f)) == std::vector<double>{1, 0, 1});
  CHECK(all_values(lt(f, labels)) == std::vector<double>{0, 0, 0});
  CHECK(all_values(gt(f, labels)) == std::vector<double>{0, 1, 0});
  CHECK(promote_types(DType::int64, DType::float32) == DType::float32);
  CHECK(promote_types(DType::bool_, DType::int32) == DType::int32);
  CHECK(promote_types(DType::bfloat16, DType::int64) == DType::bfloat16);
  CHECK(promote_types(DType::float64, DType::bfloat16) == DType::float64);

  // bfloat16 compares through float32, exactly.
  const Tensor h = tensor<float>({1.f, 1.0078125f, -2.f}).to(DType::bfloat16);
  CHECK(all_values(eq(h, h)) == std::vector<double>{1, 1, 1});
  CHECK(all_values(gt(h, 1.0)) == std::vector<double>{0, 1, 0});
  CHECK(all_values(eq(h, tensor<float>({1.f, 1.0078125f, -2.f}))) == std::vector<double>{1, 1, 1});
}

TEST_CASE("compare: sum counts bool and integer tensors in int64", "[ops][compare][reduce]") {
  const Tensor mask = from_vector<bool>({true, false, true, true, false, true}, {2, 3});
  const Tensor n = sum(mask);
  CHECK(n.dtype() == DType::int64);
  CHECK(n.shape() == Shape{});
  CHECK(n.item<std::int64_t>() == 4);
  CHECK(sum(mask, 1).dtype() == DType::int64);
  CHECK(all_values(sum(mask, 1)) == std::vector<double>{2, 2});
  CHECK(all_values(sum(mask, 0)) == std::vector<double>{2, 0, 2});
  CHECK(sum(mask, -1, true).shape() == Shape{2, 1});
  CHECK(sum(mask, 0, true).shape() == Shape{1, 3});
  CHECK(sum(tensor<std::int32_t>({2000000000, 2000000000})).item<std::int64_t>() == 4000000000);
  const Tensor big = tensor<std::int64_t>({(std::int64_t{1} << 53) + 1, 1});
  CHECK(sum(big).item<std::int64_t>() == (std::int64_t{1} << 53) + 2);  // exact, not through double
  CHECK(sum(zeros({0}, {.dtype = DType::bool_})).item<std::int64_t>() == 0);
  CHECK_THROWS_AS(sum(mask, 2), IndexError);
  CHECK_THROWS_AS(mean(mask), TypeError);
  CHECK_THROWS_WITH(mean(mask), Catch::Contains("mean") && Catch::Contains("bool"));
}

TEST_CASE("compare: counting correct predictions, as the README's evaluation does", "[ops][compare]") {
  const Tensor output = random_input({50, 10}, 3, false).to(DType::float32);
  const Tensor target = from_vector<std::int64_t>(
      [&] {
        std::vector<std::int64_t> t;
        for (std::int64_t i = 0; i < 50; ++i) t.push_back((i * 7) % 10);
        return t;
      }(),
      {50});
  const Tensor pred = argmax(output, 1);
  std::int64_t expected = 0;
  for (std::int64_t i = 0; i < 50; ++i) {
    std::int64_t best = 0;
    for (std::int64_t k = 1; k < 10; ++k)
      if (output.at<float>({i, k}) > output.at<float>({i, best})) best = k;
    expected += best == target.data<std::int64_t>()[i];
  }
  CHECK(sum(eq(pred, target)).item<std::int64_t>() == expected);
  CHECK(sum(pred == target).item<std::int64_t>() == expected);
  // The rest of the README: a fraction, as a double.
  CHECK(sum(pred == target).item() / 50.0 == Approx(static_cast<double>(expected) / 50.0));
}

TEST_CASE("compare: misuse names the op and both shapes", "[ops][compare][errors]") {
  const Tensor a = zeros({2, 3}), b = zeros({4});
  CHECK_THROWS_AS(eq(a, b), ShapeError);
  CHECK_THROWS_WITH(eq(a, b), Catch::Contains("eq: shapes [2, 3] and [4] cannot be broadcast"));
  CHECK_THROWS_WITH(a >= b, Catch::Contains("ge: shapes [2, 3] and [4]"));
  CHECK_THROWS_WITH(lt(Tensor(), a), Catch::Contains("lt") && Catch::Contains("undefined"));
}
