// The bfloat16 scalar and dtype: rounding (expected bits worked out by hand below),
// conversions, creation, printing, and the errors ops give for it.

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <tinynet/tinynet.hpp>
#include <vector>

using namespace tinynet;

namespace {

float float_of_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

std::uint32_t bits_of_float(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

std::uint16_t bf16_bits(float f) { return bfloat16(f).bits; }

bool is_nan_bits(std::uint16_t b) { return (b & 0x7F80u) == 0x7F80u && (b & 0x007Fu) != 0; }

}  // namespace

// A float's upper 16 bits are the bfloat16; the lower 16 decide the rounding: above
// 0x8000 up, below down, exactly 0x8000 (a tie) to the even upper half.
TEST_CASE("bfloat16: float rounds to nearest, ties to even", "[bfloat16]") {
  // 1 + 2^-8 = 0x3F808000: halfway between 1 (0x3F80) and 1 + 2^-7 (0x3F81); 0x3F80 is even.
  CHECK(bf16_bits(1.0f + std::ldexp(1.0f, -8)) == 0x3F80);
  // 1 + 3 * 2^-8 = 0x3F818000: halfway between 0x3F81 and 0x3F82 (= 1 + 2^-6); up to even.
  CHECK(bf16_bits(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3F82);
  CHECK(float(bfloat16(1.0f + 3 * std::ldexp(1.0f, -8))) == 1.0f + std::ldexp(1.0f, -6));
  // Just above and just below the first tie.
  CHECK(bf16_bits(float_of_bits(0x3F808001u)) == 0x3F81);
  CHECK(bf16_bits(float_of_bits(0x3F807FFFu)) == 0x3F80);
  // Sign does not change the rule.
  CHECK(bf16_bits(-(1.0f + std::ldexp(1.0f, -8))) == 0xBF80);
  CHECK(bf16_bits(-(1.0f + 3 * std::ldexp(1.0f, -8))) == 0xBF82);
  // Exact values convert exactly.
  CHECK(bf16_bits(1.0f) == 0x3F80);
  CHECK(bf16_bits(-2.5f) == 0xC020);
  CHECK(bf16_bits(0.1f) == 0x3DCD);  // 0x3DCCCCCD: the low half 0xCCCD is above the tie
}

TEST_CASE("bfloat16: NaN, infinities, overflow, denormals and -0", "[bfloat16]") {
  // NaN stays NaN, of the same sign, even when its payload is only in the low 16 bits
  // (0x7F800001: truncating would give 0x7F80, infinity).
  CHECK(is_nan_bits(bf16_bits(std::numeric_limits<float>::quiet_NaN())));
  CHECK(bf16_bits(float_of_bits(0x7F800001u)) == 0x7FC0);
  CHECK(bf16_bits(float_of_bits(0xFF800001u)) == 0xFFC0);
  CHECK(bf16_bits(float_of_bits(0x7FBF0000u)) == 0x7FFF);  // signalling NaN: quieted, payload kept
  CHECK(std::isnan(float(bfloat16::from_bits(0x7FC0))));

  CHECK(bf16_bits(std::numeric_limits<float>::infinity()) == 0x7F80);
  CHECK(bf16_bits(-std::numeric_limits<float>::infinity()) == 0xFF80);
  // The largest finite bfloat16 is 0x7F7F; the largest float (0x7F7FFFFF) is above the
  // tie 0x7F7F8000 with infinity and rounds to it; the tie itself goes to the even 0x7F80.
  CHECK(bf16_bits(std::numeric_limits<float>::max()) == 0x7F80);
  CHECK(bf16_bits(-std::numeric_limits<float>::max()) == 0xFF80);
  CHECK(bf16_bits(float_of_bits(0x7F7F8000u)) == 0x7F80);
  CHECK(bf16_bits(float_of_bits(0x7F7F7FFFu)) == 0x7F7F);

  // Denormals: 0x00010000 is the smallest bfloat16 denormal, 2^-133.
  CHECK(bf16_bits(float_of_bits(0x00010000u)) == 0x0001);
  CHECK(float(bfloat16::from_bits(0x0001)) == std::ldexp(1.0f, -133));
  CHECK(bf16_bits(std::numeric_limits<float>::denorm_min()) == 0x0000);
  CHECK(bf16_bits(float_of_bits(0x00008000u)) == 0x0000);  // tie with 0x0001: to even 0
  CHECK(bf16_bits(float_of_bits(0x00008001u)) == 0x0001);
  CHECK(bf16_bits(float_of_bits(0x00018000u)) == 0x0002);  // tie between 0x0001 and 0x0002
  CHECK(bf16_bits(float_of_bits(0x007FFFFFu)) == 0x0080);  // largest float denormal up to the smallest normal

  CHECK(bf16_bits(-0.0f) == 0x8000);
  CHECK(std::signbit(float(bfloat16(-0.0f))));
  CHECK(bfloat16(-0.0f) == bfloat16(0.0f));
  CHECK_FALSE(bfloat16::from_bits(0x7FC0) == bfloat16::from_bits(0x7FC0));
}

TEST_CASE("bfloat16: every bit pattern survives bfloat16 -> float -> bfloat16", "[bfloat16]") {
  int mismatches = 0;
  for (std::uint32_t b = 0; b <= 0xFFFF; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const float f = float(bfloat16::from_bits(bits));
    CHECK((bits_of_float(f) & 0xFFFFu) == 0);  // exact: the low half of the float is zero
    if (is_nan_bits(bits)) {
      mismatches += !is_nan_bits(bfloat16(f).bits);
    } else {
      mismatches += bfloat16(f).bits != bits;
    }
  }
  CHECK(mismatches == 0);
}

TEST_CASE("bfloat16: double and integers round once, to the nearest bfloat16", "[bfloat16]") {
  // 1 + 2^-8 + 2^-40 is just above the tie: through float it would become the tie
  // 1 + 2^-8 and then round down to 1.
  CHECK(bfloat16(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)).bits == 0x3F81);
  CHECK(bfloat16(1.0 + std::ldexp(1.0, -8)).bits == 0x3F80);
  CHECK(bfloat16(1.0 + std::ldexp(1.0, -8) - std::ldexp(1.0, -40)).bits == 0x3F80);
  CHECK(bfloat16(-(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40))).bits == 0xBF81);
  CHECK(bfloat16(1e300).bits == 0x7F80);
  CHECK(bfloat16(-1e300).bits == 0xFF80);
  CHECK(bfloat16(1e-300).bits == 0x0000);
  CHECK(is_nan_bits(bfloat16(std::numeric_limits<double>::quiet_NaN()).bits));

  // Integers: 257 is the tie between 256 (0x4380) and 258 (0x4381): to even; 259 up to 260.
  CHECK(bfloat16(257).bits == 0x4380);
  CHECK(bfloat16(259).bits == 0x4382);
  CHECK(bfloat16(-3).bits == 0xC040);
  // 2^60 + 2^52 + 1 is just above the tie between 2^60 (0x5D80) and 2^60 + 2^53; as a
  // double it would be the tie itself.
  CHECK(bfloat16((std::int64_t{1} << 60) + (std::int64_t{1} << 52) + 1).bits == 0x5D81);
  CHECK(bfloat16((std::int64_t{1} << 60) + (std::int64_t{1} << 52)).bits == 0x5D80);
  CHECK(bfloat16(std::numeric_limits<std::int64_t>::min()).bits == 0xDF00);

  CHECK(static_cast<double>(bfloat16(2.5f)) == 2.5);
  CHECK(static_cast<std::int32_t>(bfloat16(-7.0f)) == -7);
}

TEST_CASE("bfloat16 tensors: to() rounds to nearest even and converts back exactly", "[bfloat16][tensor]") {
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor f = from_vector<float>({1.0f + std::ldexp(1.0f, -8), 1.0f + 3 * std::ldexp(1.0f, -8), -0.0f, -inf,
                                       float_of_bits(0x7F800001u), std::numeric_limits<float>::max(), 0.1f},
                                      {7});
  const Tensor b = f.to(DType::bfloat16);
  CHECK(b.dtype() == DType::bfloat16);
  CHECK(b.nbytes() == 14);
  const std::uint16_t want[] = {0x3F80, 0x3F82, 0x8000, 0xFF80, 0x7FC0, 0x7F80, 0x3DCD};
  for (int i = 0; i < 7; ++i) CHECK(b.data<bfloat16>()[i].bits == want[i]);

  const Tensor back = b.to(DType::float32);
  for (int i = 0; i < 7; ++i) CHECK(bits_of_float(back.data<float>()[i]) == std::uint32_t{want[i]} << 16);
  const Tensor d = b.to(DType::float64);
  CHECK(d.data<double>()[1] == 1.0 + std::ldexp(1.0, -6));
  CHECK(std::isnan(d.data<double>()[4]));

  // From float64 and the integer types, in one rounding.
  CHECK(from_vector<double>({1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)}, {1})
            .to(DType::bfloat16)
            .data<bfloat16>()[0]
            .bits == 0x3F81);
  const Tensor i = from_vector<std::int32_t>({257, 259, -3}, {3}).to(DType::bfloat16);
  CHECK(i.data<bfloat16>()[0].bits == 0x4380);
  CHECK(i.data<bfloat16>()[1].bits == 0x4382);
  CHECK(i.data<bfloat16>()[2].bits == 0xC040);
  const Tensor l = from_vector<std::int64_t>({(std::int64_t{1} << 60) + (std::int64_t{1} << 52) + 1}, {1});
  CHECK(l.to(DType::bfloat16).data<bfloat16>()[0].bits == 0x5D81);
  // To integers: through float, truncating toward zero as float32 -> int does.
  const Tensor n = from_vector<float>({2.5f, -1.5f, 384.0f}, {3}).to(DType::bfloat16).to(DType::int64);
  CHECK(n.data<std::int64_t>()[0] == 2);
  CHECK(n.data<std::int64_t>()[1] == -1);
  CHECK(n.data<std::int64_t>()[2] == 384);
}

// Tensor conversions run vector loops (compiled for AVX-512 and AVX2 as well: core/detail/
// convert.hpp): every bfloat16 bit pattern with the lower halves that decide its rounding,
// against the scalar rounding above, over runs long enough for the vector bodies and the
// threads' chunks, and an odd tail.
TEST_CASE("bfloat16 tensors: to() rounds every bit pattern as the scalar conversion does", "[bfloat16][tensor]") {
  const std::uint32_t lows[] = {0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF};
  std::vector<float> values;
  for (std::uint32_t high = 0; high <= 0xFFFF; ++high)
    for (const std::uint32_t low : lows) values.push_back(float_of_bits(high << 16 | low));
  values.resize(values.size() + 3, 0.5f);
  const auto n = static_cast<std::int64_t>(values.size());
  const Tensor b = from_vector<float>(values, {n}).to(DType::bfloat16);
  const Tensor back = b.to(DType::float32);
  std::int64_t wrong = 0, wrong_back = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint16_t got = b.data<bfloat16>()[i].bits, want = bf16_bits(values[static_cast<std::size_t>(i)]);
    wrong += got != want;
    wrong_back += bits_of_float(back.data<float>()[i]) != std::uint32_t{got} << 16;
  }
  CHECK(wrong == 0);
  CHECK(wrong_back == 0);
}

TEST_CASE("bfloat16 tensors: creation, fill_, copy_, clone, item, at and printing", "[bfloat16][tensor]") {
  const TensorOptions bf{.dtype = DType::bfloat16};
  const Tensor z = zeros({2, 3}, bf);
  CHECK(z.dtype() == DType::bfloat16);
  for (int i = 0; i < 6; ++i) CHECK(z.data<bfloat16>()[i].bits == 0x0000);
  const Tensor o = ones({4}, bf);
  for (int i = 0; i < 4; ++i) CHECK(o.data<bfloat16>()[i].bits == 0x3F80);
  // 0.1 as a double (not through float) rounds to 0x3DCD too.
  const Tensor f = full({3}, 0.1, bf);
  for (int i = 0; i < 3; ++i) CHECK(f.data<bfloat16>()[i].bits == 0x3DCD);
  CHECK(empty({5}, bf).nbytes() == 10);
  CHECK(zeros_like(f).dtype() == DType::bfloat16);

  Tensor c = f.clone();
  CHECK_FALSE(c.shares_storage(f));
  c.fill_(-2.0);
  CHECK(c.at<bfloat16>({2}).bits == 0xC000);
  CHECK(f.at<bfloat16>({2}).bits == 0x3DCD);
  c.at<bfloat16>({0}) = bfloat16(0.5f);

  Tensor into_float = zeros({3});
  into_float.copy_(c);
  CHECK(into_float.data<float>()[0] == 0.5f);
  CHECK(into_float.data<float>()[1] == -2.0f);
  Tensor into_bf16 = zeros({3}, bf);
  into_bf16.copy_(from_vector<double>({1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40), 3, 4}, {3}));
  CHECK(into_bf16.data<bfloat16>()[0].bits == 0x3F81);

  const Tensor s = scalar_tensor(0.1, bf);
  CHECK(s.item() == 0.10009765625);  // 0x3DCD exactly
  CHECK(s.item<float>() == 0.10009765625f);
  CHECK(s.item<bfloat16>().bits == 0x3DCD);
  CHECK(scalar_tensor(3.0).item<bfloat16>().bits == 0x4040);

  const Tensor p = from_vector<float>({1.0f, 0.5f, -std::numeric_limits<float>::infinity(), 0.1f}, {4});
  const std::string text = p.to(DType::bfloat16).str();
  CHECK_THAT(text, Catch::Contains("dtype=bfloat16"));
  CHECK_THAT(text, Catch::Contains("values=[1, 0.5, -inf, 0.100098]"));
}

TEST_CASE("bfloat16 tensors: the ops without bfloat16 kernels and training refuse them, naming the op and the dtype",
          "[bfloat16][errors]") {
  const Tensor b = ones({2}, {.dtype = DType::bfloat16});
  const Tensor f = ones({2});
  // The TypeError's message, which must name bfloat16 and the way out.
  const auto type_error = [](auto&& call) -> std::string {
    try {
      call();
    } catch (const TypeError& e) {
      const std::string what = e.what();
      CHECK_THAT(what, Catch::Contains("bfloat16") && Catch::Contains(".to(DType::float32)"));
      return what;
    }
    FAIL("no TypeError");
    return "";
  };
  const Tensor b2 = ones({2, 2}, {.dtype = DType::bfloat16}), f2 = ones({2, 2});
  CHECK_THAT(
      type_error([&] { matmul(b2, f2); }),
      Catch::StartsWith("matmul: first operand must be float32 or float64, got bfloat16 (bfloat16 tensors hold"));
  CHECK_THAT(type_error([&] { matmul(f2, b2); }), Catch::StartsWith("matmul: second operand must be float32"));
  CHECK_THAT(type_error([&] { linear(b2, f2); }), Catch::Contains("got bfloat16"));
  CHECK_THAT(type_error([&] { zeros({2}, {.dtype = DType::bfloat16, .requires_grad = true}); }),
             Catch::StartsWith("only float32 and float64 tensors can require grad, got bfloat16"));
  Tensor leaf = ones({2}, {.dtype = DType::bfloat16});
  type_error([&] { leaf.requires_grad_(); });
  CHECK_THAT(type_error([&] { dispatch_floating(DType::bfloat16, "my_op", []<typename T>() {}); }),
             Catch::StartsWith("my_op: expected a float32 or float64 tensor, got bfloat16"));
  CHECK_THAT(type_error([&] { dispatch_arithmetic(DType::bfloat16, "my_op", []<typename T>() {}); }),
             Catch::StartsWith("my_op: expected a float32, float64, int32 or int64 tensor, got bfloat16"));
  CHECK_THROWS_AS(randn({2}, {.dtype = DType::bfloat16}), TypeError);
  CHECK_THROWS_AS(b.data<float>(), TypeError);
}
