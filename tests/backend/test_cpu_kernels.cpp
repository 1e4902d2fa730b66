// The CPU backend's own small kernels against double-precision loops, at the vector level
// in use (CTest runs this file once per level the machine has, with TINYNET_CPU_ISA), over the remainders
// their blocking leaves (rows and columns not a multiple of the register block, k not a
// multiple of 16) and leading dimensions wider than the matrices, whose padding must stay
// untouched; then each float32 convolution path through the backend's entry points. The
// same file is built a second time without optimisation (backend_tests_O0), as in a Debug
// build: nothing inlined or unrolled, so an intrinsic that needs a constant would fail to
// compile there.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <tinynet/backend/cpu/conv2d.hpp>
#include <tinynet/backend/cpu/kernels_for_isa.hpp>
#include <vector>

namespace {

namespace cpu = tinynet::backend::cpu;

/// Calls `call` (a function name and its arguments) in the namespace of the level in use.
#if defined(TINYNET_CPU_X86)
#define AT_LEVEL(call)                                            \
  (cpu::isa() == cpu::Isa::amx           ? cpu::amx::call         \
   : cpu::isa() == cpu::Isa::avx512_bf16 ? cpu::avx512_bf16::call \
   : cpu::isa() == cpu::Isa::avx512      ? cpu::avx512::call      \
   : cpu::isa() == cpu::Isa::avx2        ? cpu::avx2::call        \
                                         : cpu::baseline::call)
#else
#define AT_LEVEL(call) cpu::baseline::call
#endif

/// Whether the level in use has the vector GEMM kernels (gemm_nt, gemm_rows); says so when not.
bool has_vector_gemms() {
  if (cpu::isa() != cpu::Isa::baseline) return true;
  WARN("level " << cpu::isa_name(cpu::isa()) << ": gemm_nt and gemm_rows exist at the avx2 and avx512 levels only");
  return false;
}

#if defined(TINYNET_CPU_X86)
/// Calls `call` at the vector level in use (avx2 or avx512).
#define AT_VECTOR_LEVEL(call)                                     \
  (cpu::isa() == cpu::Isa::amx           ? cpu::amx::call         \
   : cpu::isa() == cpu::Isa::avx512_bf16 ? cpu::avx512_bf16::call \
   : cpu::isa() == cpu::Isa::avx512      ? cpu::avx512::call      \
                                         : cpu::avx2::call)
#endif

constexpr float kPad = -12345.0f;  // in the padding of C's rows; must survive

std::vector<float> random_floats(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& e : v) e = u(rng);
  return v;
}

/// 64-byte aligned floats, as the library's allocator hands out.
std::unique_ptr<float[], decltype(&std::free)> aligned_floats(std::int64_t n) {
  const auto bytes = static_cast<std::size_t>((n * 4 + 63) / 64 * 64);
  return {static_cast<float*>(std::aligned_alloc(64, bytes == 0 ? 64 : bytes)), &std::free};
}

/// |got - want| within 1e-5 of the sum of the magnitudes of the terms behind want.
void check_sum(double got, double want, double scale) { REQUIRE(std::fabs(got - want) <= 1e-5 * scale + 1e-6); }

}  // namespace

#if defined(TINYNET_CPU_X86)
TEST_CASE("TINYNET_CPU_ISA: each level by name, a cap above the CPU's falls back saying so, other values fail",
          "[backend][cpu]") {
  std::string notice;
  for (auto level : {cpu::Isa::amx, cpu::Isa::avx512_bf16, cpu::Isa::avx512, cpu::Isa::avx2, cpu::Isa::baseline}) {
    INFO(cpu::isa_name(level));
    CHECK(cpu::choose_isa(cpu::isa_name(level), cpu::Isa::amx, notice, true) == level);
    CHECK(notice.empty());
  }
  CHECK(cpu::choose_isa(nullptr, cpu::Isa::avx2, notice, true) == cpu::Isa::avx2);
  CHECK(cpu::choose_isa("", cpu::Isa::amx, notice, true) == cpu::Isa::amx);
  CHECK(cpu::choose_isa("amx", cpu::Isa::avx512_bf16, notice, true) == cpu::Isa::avx512_bf16);
  CHECK(notice == "tinynet: TINYNET_CPU_ISA=amx but this CPU has at most avx512_bf16; using avx512_bf16");
  // Where vdpbf16ps does not outpace the FMAs, avx512_bf16 runs only when named.
  CHECK(cpu::choose_isa(nullptr, cpu::Isa::avx512_bf16, notice, false) == cpu::Isa::avx512);
  CHECK(cpu::choose_isa(nullptr, cpu::Isa::avx512_bf16, notice, true) == cpu::Isa::avx512_bf16);
  CHECK(cpu::choose_isa(nullptr, cpu::Isa::amx, notice, false) == cpu::Isa::amx);
  CHECK(cpu::choose_isa("avx512_bf16", cpu::Isa::amx, notice, false) == cpu::Isa::avx512_bf16);
  CHECK(cpu::choose_isa("avx512_bf16", cpu::Isa::avx512_bf16, notice, false) == cpu::Isa::avx512_bf16);
  CHECK(notice.empty());
  CHECK(cpu::choose_isa("amx", cpu::Isa::avx512_bf16, notice, false) == cpu::Isa::avx512);
  CHECK(notice == "tinynet: TINYNET_CPU_ISA=amx but this CPU has at most avx512_bf16; using avx512");
  REQUIRE_THROWS_WITH(cpu::choose_isa("amx512", cpu::Isa::amx, notice, true),
                      "TINYNET_CPU_ISA=amx512: expected amx, avx512_bf16, avx512, avx2 or baseline");
  // The level in use is at most the detected one, and amx only where the OS granted the tiles.
  CHECK(static_cast<int>(cpu::isa()) <= static_cast<int>(cpu::detected_isa()));
  if (cpu::isa() == cpu::Isa::amx) CHECK(cpu::request_amx_tiles());
  if (!cpu::cpu_has_amx_bf16()) CHECK(cpu::detected_isa() != cpu::Isa::amx);
  if (std::getenv("TINYNET_CPU_ISA") == nullptr && cpu::detected_isa() == cpu::Isa::avx512_bf16)
    CHECK(cpu::isa() == (cpu::cpu_bf16_dot_outpaces_fma() ? cpu::Isa::avx512_bf16 : cpu::Isa::avx512));
}

TEST_CASE("gemm_nt: C += A B^T for every remainder of its blocks", "[backend][cpu]") {
  if (!has_vector_gemms()) return;
  for (std::int64_t m = 1; m <= 9; ++m)
    for (std::int64_t n = 1; n <= 9; ++n)
      for (std::int64_t k : {0, 1, 15, 16, 17, 40, 600, 1100}) {
        INFO("m " << m << " n " << n << " k " << k);
        const std::int64_t lda = k + 3, ldb = k + 5, ldc = n + 2;
        const auto a = random_floats(static_cast<std::size_t>(m * lda), 1),
                   b = random_floats(static_cast<std::size_t>(n * ldb), 2);
        auto c = random_floats(static_cast<std::size_t>(m * ldc), 3);
        for (std::int64_t o = 0; o < m; ++o) c[o * ldc + n] = c[o * ldc + n + 1] = kPad;
        const auto c0 = c;
        AT_VECTOR_LEVEL(gemm_nt(m, n, k, a.data(), lda, b.data(), ldb, c.data(), ldc));
        for (std::int64_t o = 0; o < m; ++o) {
          for (std::int64_t r = 0; r < n; ++r) {
            double want = c0[o * ldc + r], scale = std::fabs(want);
            for (std::int64_t p = 0; p < k; ++p) {
              want += double(a[o * lda + p]) * b[r * ldb + p];
              scale += std::fabs(double(a[o * lda + p]) * b[r * ldb + p]);
            }
            REQUIRE(std::fabs(c[o * ldc + r] - want) <= 1e-6 * scale + 1e-7);
          }
          REQUIRE(c[o * ldc + n] == kPad);
          REQUIRE(c[o * ldc + n + 1] == kPad);
        }
      }
}

TEST_CASE("gemm_rows: C = A B (+ bias, ReLU) for every remainder of its blocks", "[backend][cpu]") {
  if (!has_vector_gemms()) return;
  for (std::int64_t m : {1, 3, 7, 8, 9, 17})
    for (std::int64_t n : {1, 15, 16, 47, 48, 49, 100})
      for (std::int64_t k : {1, 7, 50})
        for (int mode = 0; mode < 3; ++mode) {  // plain, + bias, + bias and ReLU
          INFO("m " << m << " n " << n << " k " << k << " mode " << mode);
          const std::int64_t lda = k + 1, ldb = n + 3, ldc = n + 2;
          const auto a = random_floats(static_cast<std::size_t>(m * lda), 4),
                     b = random_floats(static_cast<std::size_t>(k * ldb), 5);
          const auto bias = random_floats(static_cast<std::size_t>(m), 6);
          std::vector<float> c(static_cast<std::size_t>(m * ldc), kPad);
          AT_VECTOR_LEVEL(gemm_rows(m, n, k, a.data(), lda, b.data(), ldb, c.data(), ldc,
                                    mode > 0 ? bias.data() : nullptr, mode == 2));
          for (std::int64_t o = 0; o < m; ++o) {
            for (std::int64_t p = 0; p < n; ++p) {
              double want = mode > 0 ? bias[o] : 0.0, scale = std::fabs(want);
              for (std::int64_t j = 0; j < k; ++j) {
                want += double(a[o * lda + j]) * b[j * ldb + p];
                scale += std::fabs(double(a[o * lda + j]) * b[j * ldb + p]);
              }
              if (mode == 2) want = std::max(want, 0.0);
              REQUIRE(std::fabs(c[o * ldc + p] - want) <= 1e-6 * scale + 1e-7);
            }
            REQUIRE(c[o * ldc + n] == kPad);
            REQUIRE(c[o * ldc + n + 1] == kPad);
          }
        }
}

#endif  // TINYNET_CPU_X86

TEST_CASE("pack_rows: rows gathered into one run, several to a vector or one at a time", "[backend][cpu]") {
  for (std::int64_t n = 1; n <= 17; ++n)
    for (std::int64_t rows = 1; rows <= 20; ++rows) {
      INFO("rows " << rows << " of " << n);
      const std::int64_t stride = n + 3;
      const auto src = random_floats(static_cast<std::size_t>(rows * stride), 7);
      std::vector<float> dst(static_cast<std::size_t>(rows * n + 1), kPad);
      AT_LEVEL(pack_rows(dst.data(), src.data(), stride, rows, n));
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t x = 0; x < n; ++x) REQUIRE(dst[r * n + x] == src[r * stride + x]);
      REQUIRE(dst[rows * n] == kPad);
    }
}

TEST_CASE("im2col and col2im at the level in use equal the portable loops bit for bit", "[backend][cpu]") {
  using tinynet::backend::Conv2dGeometry;
  // Stride 2 with rows of up to 32 inputs (split into even and odd elements once with
  // AVX-512: padded by 1, odd widths below and above 16, taps 2 either side, 1x1, a 7x7 stem,
  // stride 1 down the rows, a tap that reads no column), wider rows, stride 1.
  // col2im adds every column entry in im2col's order onto an input that is not zero, so
  // that any other order of the sums would show; elements no entry read keep their bits (a
  // -0 in column 1, which the 1x1 layer skips).
  const Conv2dGeometry geometry[] = {
      {1, 3, 28, 28, 1, 3, 3, 2, 2, 1, 1, 14, 14}, {1, 2, 9, 11, 1, 3, 3, 2, 2, 1, 1, 5, 6},
      {1, 2, 10, 10, 1, 5, 5, 2, 2, 2, 2, 5, 5},   {1, 2, 14, 14, 1, 1, 1, 2, 2, 0, 0, 7, 7},
      {1, 2, 32, 32, 1, 3, 3, 2, 2, 1, 1, 16, 16}, {1, 2, 37, 37, 1, 3, 3, 2, 2, 1, 1, 19, 19},
      {1, 2, 8, 9, 1, 3, 3, 1, 1, 1, 1, 8, 9},     {1, 2, 10, 23, 1, 3, 3, 2, 2, 1, 1, 5, 12},
      {1, 1, 32, 32, 1, 7, 7, 2, 2, 3, 3, 16, 16}, {1, 2, 9, 11, 1, 3, 3, 1, 2, 1, 1, 9, 6},
      {1, 1, 4, 2, 1, 5, 5, 2, 2, 3, 3, 3, 2}};
  if (cpu::isa() < cpu::Isa::avx512)
    WARN("level " << cpu::isa_name(cpu::isa()) << ": stride-2 rows are split in vectors from the avx512 level up");
  for (std::size_t t = 0; t < std::size(geometry); ++t) {
    const Conv2dGeometry& g = geometry[t];
    INFO("case " << t);
    const std::int64_t ld = g.col_cols() + 3, cols = g.col_rows() * ld;
    const auto in = random_floats(static_cast<std::size_t>(g.c * g.h * g.w), 12);
    std::vector<float> want(static_cast<std::size_t>(cols), kPad), got(want);
    cpu::baseline::im2col(g, in.data(), want.data(), ld);
    AT_LEVEL(im2col(g, in.data(), got.data(), ld));
    REQUIRE(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0);

    const auto col = random_floats(static_cast<std::size_t>(cols), 13);
    std::vector<float> want_in = random_floats(in.size(), 14);
    want_in[1] = -0.0f;
    std::vector<float> got_in(want_in);
    cpu::baseline::col2im_add(g, col.data(), ld, want_in.data());
    AT_LEVEL(col2im_add(g, col.data(), ld, got_in.data()));
    REQUIRE(std::memcmp(want_in.data(), got_in.data(), want_in.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("conv2d kernels: each float32 path against double loops", "[backend][cpu]") {
  using tinynet::backend::Conv2dGeometry;
  const tinynet::backend::cpu::Tag cpu;
  // Winograd F(2x2, 3x3) with padding; the one-channel direct kernel; im2col with output
  // rows of 8 packed two to a vector, samples side by side, and the dot-product kernel;
  // stride 2 (ResNet's downsampling 3x3 and 1x1 layers), rows of every other input column:
  // output rows of 19 (with AVX-512 a vector and a tail) and of 16 (a whole vector only);
  // with AVX-512 rows of up to 32 inputs split into even and odd elements once, for every
  // tap (a 28-wide image padded by 1, an odd width, taps 2 either side of the centre);
  // stride 1 with the size kept (the last four), whose weight gradient reads the input's
  // rows shifted in place at AVX2: several images in one product (the padding rows between
  // them shared), an odd width, and kernels that are not square.
  // {n, c, h, w, out_c, kh, kw, stride h, w, padding h, w, oh, ow}
  const Conv2dGeometry geometry[] = {
      {2, 16, 6, 7, 17, 3, 3, 1, 1, 1, 1, 6, 7},  {2, 1, 9, 11, 5, 5, 5, 1, 1, 0, 0, 5, 7},
      {3, 4, 12, 12, 6, 5, 5, 1, 1, 0, 0, 8, 8},  {2, 3, 37, 37, 4, 3, 3, 2, 2, 1, 1, 19, 19},
      {2, 5, 14, 14, 6, 1, 1, 2, 2, 0, 0, 7, 7},  {1, 2, 32, 33, 3, 3, 3, 2, 2, 0, 0, 15, 16},
      {1, 3, 16, 32, 2, 1, 1, 2, 2, 0, 0, 8, 16}, {2, 4, 28, 28, 5, 3, 3, 2, 2, 1, 1, 14, 14},
      {1, 3, 9, 11, 2, 3, 3, 2, 2, 1, 1, 5, 6},   {1, 2, 10, 10, 3, 5, 5, 2, 2, 2, 2, 5, 5},
      {3, 3, 7, 7, 4, 5, 5, 1, 1, 2, 2, 7, 7},    {4, 5, 5, 9, 6, 3, 3, 1, 1, 1, 1, 5, 9},
      {2, 3, 6, 8, 4, 1, 3, 1, 1, 0, 1, 6, 8},    {2, 2, 5, 6, 3, 3, 5, 1, 1, 1, 2, 5, 6}};
  // Winograd and the one-channel kernel exist at the avx2 and avx512 levels; at baseline
  // im2col + GEMM.
  CHECK(tinynet::backend::cpu::uses_winograd<float>(geometry[0]) == (cpu::isa() != cpu::Isa::baseline));
  CHECK(tinynet::backend::cpu::uses_one_channel<float>(geometry[1]) == (cpu::isa() != cpu::Isa::baseline));
  CHECK(tinynet::backend::cpu::cpu_group(geometry[2]) == 3);
  CHECK(tinynet::backend::cpu::same_padded_shape(geometry[10]));
  CHECK(tinynet::backend::cpu::same_padded_shape(geometry[13]));
  CHECK_FALSE(tinynet::backend::cpu::same_padded_shape(geometry[7]));  // stride 2
  CHECK(tinynet::backend::cpu::cpu_group(geometry[11]) == 4);
  for (std::size_t t = 0; t < std::size(geometry); ++t) {
    const Conv2dGeometry& g = geometry[t];
    INFO("case " << t);
    const std::int64_t oh = g.oh, ow = g.ow, xs = g.n * g.c * g.h * g.w, ws = g.out_c * g.c * g.kh * g.kw,
                       ys = g.n * g.out_c * oh * ow;
    const auto x = random_floats(static_cast<std::size_t>(xs), 8), w = random_floats(static_cast<std::size_t>(ws), 9);
    const auto b = random_floats(static_cast<std::size_t>(g.out_c), 10),
               gy = random_floats(static_cast<std::size_t>(ys), 11);
    std::vector<float> y(static_cast<std::size_t>(ys)), dx(static_cast<std::size_t>(xs)),
        dw(static_cast<std::size_t>(ws)), db(static_cast<std::size_t>(g.out_c));
    constexpr auto f32 = tinynet::backend::Products::as_input;
    auto scratch = aligned_floats(std::max(tinynet::backend::cpu::conv2d_forward_scratch(cpu, g, f32),
                                           tinynet::backend::cpu::conv2d_backward_scratch(cpu, g, false, f32)));
    tinynet::backend::cpu::conv2d_forward<float>(cpu, g, x.data(), w.data(), b.data(), y.data(), scratch.get(), false,
                                                 f32);
    tinynet::backend::cpu::conv2d_backward<float>(cpu, g, x.data(), w.data(), gy.data(), dx.data(), false, dw.data(),
                                                  false, db.data(), false, scratch.get(), nullptr, f32);
    const auto X = [&](std::int64_t n, std::int64_t ci, std::int64_t iy, std::int64_t ix) {
      return double(x[static_cast<std::size_t>(((n * g.c + ci) * g.h + iy) * g.w + ix)]);
    };
    const auto W = [&](std::int64_t o, std::int64_t ci, std::int64_t i, std::int64_t j) {
      return double(w[static_cast<std::size_t>(((o * g.c + ci) * g.kh + i) * g.kw + j)]);
    };
    const auto GY = [&](std::int64_t n, std::int64_t o, std::int64_t oy, std::int64_t ox) {
      return double(gy[static_cast<std::size_t>(((n * g.out_c + o) * oh + oy) * ow + ox)]);
    };
    std::vector<double> want_dx(static_cast<std::size_t>(xs)), scale_dx(static_cast<std::size_t>(xs));
    for (std::int64_t o = 0; o < g.out_c; ++o) {
      double want_db = 0, scale_db = 0;
      for (std::int64_t n = 0; n < g.n; ++n)
        for (std::int64_t oy = 0; oy < oh; ++oy)
          for (std::int64_t ox = 0; ox < ow; ++ox) {
            double want = b[static_cast<std::size_t>(o)], scale = std::fabs(want);
            for (std::int64_t ci = 0; ci < g.c; ++ci)
              for (std::int64_t i = 0; i < g.kh; ++i)
                for (std::int64_t j = 0; j < g.kw; ++j) {
                  const std::int64_t iy = oy * g.sh + i - g.ph, ix = ox * g.sw + j - g.pw;
                  if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                  want += W(o, ci, i, j) * X(n, ci, iy, ix);
                  scale += std::fabs(W(o, ci, i, j) * X(n, ci, iy, ix));
                  const auto at = static_cast<std::size_t>(((n * g.c + ci) * g.h + iy) * g.w + ix);
                  want_dx[at] += W(o, ci, i, j) * GY(n, o, oy, ox);
                  scale_dx[at] += std::fabs(W(o, ci, i, j) * GY(n, o, oy, ox));
                }
            check_sum(y[static_cast<std::size_t>(((n * g.out_c + o) * oh + oy) * ow + ox)], want, scale);
            want_db += GY(n, o, oy, ox);
            scale_db += std::fabs(GY(n, o, oy, ox));
          }
      check_sum(db[static_cast<std::size_t>(o)], want_db, scale_db);
      for (std::int64_t ci = 0; ci < g.c; ++ci)
        for (std::int64_t i = 0; i < g.kh; ++i)
          for (std::int64_t j = 0; j < g.kw; ++j) {
            double want = 0, scale = 0;
            for (std::int64_t n = 0; n < g.n; ++n)
              for (std::int64_t oy = 0; oy < oh; ++oy)
                for (std::int64_t ox = 0; ox < ow; ++ox) {
                  const std::int64_t iy = oy * g.sh + i - g.ph, ix = ox * g.sw + j - g.pw;
                  if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                  want += GY(n, o, oy, ox) * X(n, ci, iy, ix);
                  scale += std::fabs(GY(n, o, oy, ox) * X(n, ci, iy, ix));
                }
            check_sum(dw[static_cast<std::size_t>(((o * g.c + ci) * g.kh + i) * g.kw + j)], want, scale);
          }
    }
    for (std::size_t i = 0; i < want_dx.size(); ++i) check_sum(dx[i], want_dx[i], scale_dx[i]);
  }
}

TEST_CASE("bfloat16 runs: rounded as bfloat16(float) rounds, widened exactly, nothing past the run touched",
          "[backend][cpu]") {
  // Ties to even both ways, the carry into the exponent and past the largest finite value,
  // signed zeros, infinities, NaNs (quiet, signalling, negative), denormals, then random
  // bits; every run length up to three vectors and more, so that full vectors and each
  // tail (masked, or element by element at AVX2) are taken.
  std::vector<std::uint32_t> bits = {0x3F808000u, 0x3F818000u, 0x3F80FFFFu, 0x3FFFFFFFu, 0x7F7FFFFFu, 0xFF7FFFFFu,
                                     0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x7F800001u,
                                     0xFFC12345u, 0x00800000u, 0x00000001u, 0x807FFFFFu};
  std::mt19937 rng(11);
  while (bits.size() < 64) bits.push_back(rng());
  std::vector<float> in(bits.size());
  std::memcpy(in.data(), bits.data(), bits.size() * 4);
  const auto sentinel = tinynet::bfloat16::from_bits(0xABCD);
  const auto bits_of = [](float f) {
    std::uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
  };
  // After arithmetic, a NaN's payload depends on the order the compiler gives the operands.
  const auto same = [](tinynet::bfloat16 a, float expected) {
    const float f = static_cast<float>(a);
    return std::isnan(expected) ? std::isnan(f) : a.bits == tinynet::bfloat16(expected).bits;
  };
  for (std::int64_t n = 1; n <= 53; ++n) {
    INFO(n << " elements");
    const auto size = static_cast<std::size_t>(n) + 8;
    std::vector<tinynet::bfloat16> out(size, sentinel), sums(size, sentinel), plus(size, sentinel);
    AT_LEVEL(copy_run(out.data(), in.data(), n));
    std::vector<float> back(size, kPad), masked(size, kPad);
    AT_LEVEL(copy_run(back.data(), out.data(), n));
    // The accumulating store (dst + src summed in float, then rounded), the bias and ReLU
    // store of the convolution's output, and the gradient through that ReLU's output.
    std::copy(out.begin(), out.end(), sums.begin());
    AT_LEVEL(copy_run(sums.data(), in.data(), n, true));
    AT_LEVEL(copy_plus_run(plus.data(), in.data(), 0.5f, n, true));
    AT_LEVEL(relu_grad_run(masked.data(), out.data(), plus.data(), n));
    for (std::int64_t i = 0; i < n + 8; ++i) {
      const auto at = static_cast<std::size_t>(i);
      INFO("element " << i << ", bits " << std::hex << bits[at % bits.size()]);
      if (i >= n) {
        CHECK(out[at].bits == sentinel.bits);
        CHECK(sums[at].bits == sentinel.bits);
        CHECK(plus[at].bits == sentinel.bits);
        CHECK(back[at] == kPad);
        CHECK(masked[at] == kPad);
        continue;
      }
      CHECK(out[at].bits == tinynet::bfloat16(in[at]).bits);
      CHECK(bits_of(back[at]) == std::uint32_t{out[at].bits} << 16);
      CHECK(same(sums[at], static_cast<float>(out[at]) + in[at]));
      const float r = in[at] + 0.5f;
      CHECK(same(plus[at], r <= 0.0f ? 0.0f : r));
      CHECK(bits_of(masked[at]) == bits_of(static_cast<float>(plus[at]) > 0.0f ? back[at] : 0.0f));
    }
  }
}

#if defined(TINYNET_CPU_X86)
/// store_native of n floats (vectors pass between functions compiled for the avx512_bf16 level only).
__attribute__((target("avx512bf16,avx512f,avx512vl,avx512bw,avx512dq,avx2,fma,bmi,bmi2,f16c,lzcnt,popcnt"))) void
store_native(const float* in, tinynet::bfloat16* out, std::int64_t n) {
  const auto mask = static_cast<__mmask16>((1u << n) - 1u);
  cpu::avx512_bf16::bf16::detail::store_native(out, mask, cpu::avx512_bf16::Vec::load(in, mask));
}

TEST_CASE("bfloat16 stores by vcvtneps2bf16 round as bfloat16(float) does, denormals and NaNs included",
          "[backend][cpu]") {
  if (cpu::isa() < cpu::Isa::avx512_bf16) {
    WARN("level " << cpu::isa_name(cpu::isa()) << ": no AVX512-BF16, store_native is not used");
    return;
  }
  // Ties to even both ways, the rounding carry into the exponent and past the largest
  // finite value, signed zeros and infinities, NaNs (quiet, signalling with a low payload,
  // negative), and denormals, which the instruction alone would flush to zero.
  const std::vector<std::uint32_t> special = {
      0x3F808000u, 0x3F818000u, 0x3F80FFFFu, 0x3FFFFFFFu, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x00000000u, 0x80000000u,
      0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x7F800001u, 0xFFC12345u, 0x00800000u, 0x00000001u, 0x807FFFFFu};
  std::vector<std::uint32_t> bits(special);
  std::mt19937 rng(7);
  for (int i = 0; i < 64; ++i) bits.push_back(rng());
  for (std::size_t at = 0; at < bits.size(); at += 16)
    for (std::int64_t lanes : {16, 5}) {
      // The first vector holds denormals (store_elems' path); the random ones hold none
      // but by chance (the instruction's path).
      float in[16];
      for (int l = 0; l < 16; ++l) std::memcpy(&in[l], &bits[at + static_cast<std::size_t>(l)], 4);
      tinynet::bfloat16 out[16];
      for (auto& o : out) o = tinynet::bfloat16::from_bits(0xABCD);
      store_native(in, out, lanes);
      for (int l = 0; l < 16; ++l) {
        INFO("bits " << std::hex << bits[at + static_cast<std::size_t>(l)] << ", " << std::dec << lanes << " lanes");
        CHECK(out[l].bits == (l < lanes ? tinynet::bfloat16(in[l]).bits : 0xABCD));
      }
    }
}
#endif

namespace {

/// One case of the bfloat16 products' tests: random A (m x k, rows k + 3 apart), B (k x n,
/// n + 5 apart), B^T and a bias, C's rows n + 2 apart, and the check of results against
/// double sums of the rounded operands. Operands rounded to bfloat16 (8 significant bits)
/// multiply exactly in float32, so the only error left is float32 summation of k terms:
/// |got - want| <= gamma_k * sum |a b|, gamma_k = k u / (1 - k u), u = 2^-24 (Higham,
/// Accuracy and Stability, 3.1), whatever the order; the bias adds one term.
struct ProductCase {
  ProductCase(std::int64_t m, std::int64_t n, std::int64_t k, std::uint32_t seed)
      : m(m), n(n), k(k), lda(k + 3), ldb(n + 5), ldc(n + 2) {
    a = random_floats(static_cast<std::size_t>(m * lda), seed);
    b = random_floats(static_cast<std::size_t>(k * ldb), seed + 1);
    bias = random_floats(static_cast<std::size_t>(m), seed + 2);
    bt.resize(static_cast<std::size_t>(n * k));
    for (std::int64_t p = 0; p < k; ++p)
      for (std::int64_t j = 0; j < n; ++j) bt[j * k + p] = b[p * ldb + j];
  }

  /// C's rows filled with `value`, padding included.
  std::vector<float> c_of(float value) const { return std::vector<float>(static_cast<std::size_t>(m * ldc), value); }

  /// c = A B + bias (then ReLU, with `relu`; its padding left kPad), and each of `plus_half`
  /// = A B + 0.5 (its padding left 0.5).
  void check(const std::vector<float>& c, bool relu, std::initializer_list<const std::vector<float>*> plus_half) const {
    const auto gamma = [](std::int64_t k) { return k * 0x1p-24 / (1 - k * 0x1p-24); };
    const auto r = [](float v) { return static_cast<double>(tinynet::detail::round_to_bf16(v)); };
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        double want = 0, mag = 0;
        for (std::int64_t p = 0; p < k; ++p) {
          want += r(a[i * lda + p]) * r(b[p * ldb + j]);
          mag += std::fabs(r(a[i * lda + p]) * r(b[p * ldb + j]));
        }
        const double with_bias = want + bias[i];
        const double bound = gamma(k + 1) * (mag + std::fabs(bias[i]));
        const double got = c[i * ldc + j];
        if (relu && with_bias < -bound)
          REQUIRE(got == 0.0);
        else if (!relu || with_bias > bound)
          REQUIRE(std::fabs(got - with_bias) <= bound);
        for (const auto* other : plus_half)
          REQUIRE(std::fabs((*other)[i * ldc + j] - (want + 0.5)) <= gamma(k + 1) * (mag + 0.5));
      }
      REQUIRE(c[i * ldc + n] == kPad);  // the padding of C's rows stays untouched
      for (const auto* other : plus_half) REQUIRE((*other)[i * ldc + n] == 0.5f);
    }
  }

  std::int64_t m, n, k, lda, ldb, ldc;
  std::vector<float> a, b, bt, bias;
};

}  // namespace

TEST_CASE("bfloat16 products: gemm_rows and gemm_nt against double sums of the rounded operands", "[backend][cpu]") {
  // Native (vdpbf16ps, or AMX tiles) where the level in use has it.
  INFO("level " << cpu::isa_name(cpu::isa()) << (AT_LEVEL(bf16::kNative) ? ", vdpbf16ps" : ", rounded in float32"));
  for (std::int64_t m : {1, 7, 9, 17})
    for (std::int64_t n : {1, 15, 16, 47, 49, 100})
      for (std::int64_t k : {1, 2, 3, 17, 20, 31, 33, 577, 1600}) {
        INFO("m " << m << " n " << n << " k " << k);
        const ProductCase t(m, n, k, 21);
        auto buf_a = aligned_floats(cpu::bf16_operand_floats(m, k)),
             buf_b = aligned_floats(cpu::bf16_operand_floats(k, n)),
             buf_bt = aligned_floats(cpu::bf16_operand_floats(n, k));
        const auto a16 = AT_LEVEL(bf16::rows(m, k, t.a.data(), t.lda, buf_a.get()));
        const auto b16 = AT_LEVEL(bf16::pairs(k, n, t.b.data(), t.ldb, buf_b.get()));
        const auto bt16 = AT_LEVEL(bf16::rows(n, k, t.bt.data(), k, buf_bt.get()));
        for (bool relu : {false, true}) {
          auto c = t.c_of(kPad), c_nt = t.c_of(0.5f);
          AT_LEVEL(bf16::gemm_rows(m, n, k, a16, b16, c.data(), t.ldc, t.bias.data(), relu, true));
          AT_LEVEL(bf16::gemm_nt(m, n, k, a16, bt16, c_nt.data(), t.ldc));
          t.check(c, relu, {&c_nt});
        }
      }
}

#if defined(TINYNET_CPU_X86)
namespace {

/// The tile products (simd/amx_products.inl) on tiles T over the edges of their 32 x 32
/// blocks and of k's steps of 16 pairs: gemm_rows_range (C = A B + bias, ReLU; and C += A B)
/// and gemm_nt (C += A B^T), checked as the products above.
template <class Tiles>
void check_tile_products() {
  namespace level = cpu::avx512_bf16;  // prepares the operands: the amx level's layouts
  namespace tile = cpu::amx::tile;
  for (std::int64_t m : {1, 16, 17, 33, 40})
    for (std::int64_t n : {1, 15, 16, 17, 47, 50})
      for (std::int64_t k : {1, 2, 31, 33, 64, 577, 1100}) {
        INFO("m " << m << " n " << n << " k " << k);
        const ProductCase t(m, n, k, 31);
        const std::int64_t k2 = (k + 1) / 2;
        auto buf_a = aligned_floats(cpu::bf16_operand_floats(m, k)),
             buf_b = aligned_floats(cpu::bf16_operand_floats(k, n)),
             buf_bt = aligned_floats(cpu::bf16_operand_floats(n, k));
        const auto a16 = level::bf16::rows(m, k, t.a.data(), t.lda, buf_a.get());
        const auto b16 = level::bf16::pairs(k, n, t.b.data(), t.ldb, buf_b.get());
        const auto bt16 = level::bf16::rows(n, k, t.bt.data(), k, buf_bt.get());
        const auto* a32 = static_cast<const std::uint32_t*>(a16.data);
        const auto* b32 = static_cast<const std::uint32_t*>(b16.data);
        for (bool relu : {false, true}) {
          auto c = t.c_of(kPad), c_add = t.c_of(0.5f), c_nt = t.c_of(0.5f);
          tile::gemm_rows_range<Tiles>(0, m, n, k2, a32, a16.ld / 2, b32, b16.ld, c.data(), t.ldc, t.bias.data(), relu,
                                       false);
          tile::gemm_rows_range<Tiles>(0, m, n, k2, a32, a16.ld / 2, b32, b16.ld, c_add.data(), t.ldc, nullptr, false,
                                       true);
          tile::gemm_nt<Tiles>(m, n, 2 * k2, static_cast<const std::uint16_t*>(a16.data), a16.ld,
                               static_cast<const std::uint16_t*>(bt16.data), bt16.ld, c_nt.data(), t.ldc);
          t.check(c, relu, {&c_add, &c_nt});
        }
      }
}

}  // namespace

namespace {

using tinynet::bfloat16;
using tinynet::backend::Conv2dGeometry;

/// The amx level's direct 3x3 convolution (simd/amx_conv3x3.inl) on tiles T, against double
/// sums of the rounded operands: per output the bound of the products above over its
/// 9 c terms and the bias, plus, for a bfloat16 output, its rounding (2^-8 of the value).
/// Every output is written (y starts as NaN). X, Y: float or bfloat16.
template <class Tiles, typename X, typename Y>
void check_conv3x3(std::int64_t c, std::int64_t out_c, std::int64_t h, std::int64_t w, std::int64_t pad, bool bias_on,
                   bool relu) {
  const std::int64_t n = 2, oh = h + 2 * pad - 2, ow = w + 2 * pad - 2;
  const Conv2dGeometry g{n, c, h, w, out_c, 3, 3, 1, 1, pad, pad, oh, ow};
  REQUIRE(cpu::amx::conv3x3::fits(g));
  const auto xf = random_floats(static_cast<std::size_t>(n * c * h * w), 41);
  const auto wf = random_floats(static_cast<std::size_t>(out_c * c * 9), 42);
  const auto bias = random_floats(static_cast<std::size_t>(out_c), 43);
  std::vector<X> x(xf.size());
  for (std::size_t i = 0; i < xf.size(); ++i) x[i] = static_cast<X>(xf[i]);
  std::vector<Y> y(static_cast<std::size_t>(n * out_c * oh * ow), static_cast<Y>(std::nanf("")));
  cpu::amx::conv3x3::forward<Tiles>(g, x.data(), wf.data(), bias_on ? bias.data() : nullptr, y.data(), relu);
  const auto r = [](float v) { return static_cast<double>(tinynet::detail::round_to_bf16(v)); };
  const double u = 0x1p-24, terms = static_cast<double>(9 * c + 1), gamma = terms * u / (1 - terms * u);
  for (std::int64_t s = 0; s < n; ++s)
    for (std::int64_t o = 0; o < out_c; ++o)
      for (std::int64_t oy = 0; oy < oh; ++oy)
        for (std::int64_t ox = 0; ox < ow; ++ox) {
          double want = bias_on ? bias[o] : 0.0, mag = std::fabs(want);
          for (std::int64_t ci = 0; ci < c; ++ci)
            for (std::int64_t t = 0; t < 9; ++t) {
              const std::int64_t iy = oy + t / 3 - pad, ix = ox + t % 3 - pad;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              const double p = r(static_cast<float>(x[((s * c + ci) * h + iy) * w + ix])) * r(wf[(o * c + ci) * 9 + t]);
              want += p;
              mag += std::fabs(p);
            }
          double bound = gamma * mag;
          if (std::is_same_v<Y, bfloat16>) bound += 0x1p-8 * (std::fabs(want) + bound);
          const double got = static_cast<double>(static_cast<float>(y[((s * out_c + o) * oh + oy) * ow + ox]));
          INFO("sample " << s << " channel " << o << " at " << oy << ", " << ox);
          if (relu && want < -bound)
            REQUIRE(got == 0.0);
          else if (!relu || want > bound)
            REQUIRE(std::fabs(got - want) <= bound);
          else
            REQUIRE(std::isfinite(got));
        }
}

/// The same convolution's input gradient (input_grad: the output gradient, bfloat16 with
/// its samples side by side in each channel's row, as the backward pass lays it out, carried
/// back through the filters), written or added to dx (of type X, starting at 0.5), against
/// double sums as above: each input sums up to 9 out_c products.
template <class Tiles, typename X>
void check_conv3x3_input_grad(std::int64_t c, std::int64_t out_c, std::int64_t h, std::int64_t w, std::int64_t pad,
                              bool accumulate) {
  const std::int64_t n = 2, oh = h + 2 * pad - 2, ow = w + 2 * pad - 2, ld = n * oh * ow;
  const Conv2dGeometry g{n, c, h, w, out_c, 3, 3, 1, 1, pad, pad, oh, ow};
  const auto gf = random_floats(static_cast<std::size_t>(out_c * ld), 44);
  const auto wf = random_floats(static_cast<std::size_t>(out_c * c * 9), 45);
  std::vector<bfloat16> gy(gf.size());
  for (std::size_t i = 0; i < gf.size(); ++i) gy[i] = bfloat16(gf[i]);
  std::vector<std::uint16_t> filters(
      static_cast<std::size_t>(cpu::amx::conv3x3::filter_words(cpu::amx::conv3x3::input_grad_geometry(g))));
  cpu::amx::conv3x3::prepare_input_grad_filters(g, wf.data(), filters.data());
  const X init = accumulate ? static_cast<X>(0.5f) : static_cast<X>(std::nanf(""));
  std::vector<X> dx(static_cast<std::size_t>(n * c * h * w), init);
  cpu::amx::conv3x3::input_grad<Tiles>(g, n, cpu::amx::conv3x3::Input<bfloat16>{gy.data(), ld, oh * ow}, filters.data(),
                                       accumulate, dx.data());
  const auto r = [](float v) { return static_cast<double>(tinynet::detail::round_to_bf16(v)); };
  std::vector<double> want(dx.size(), accumulate ? 0.5 : 0.0), mag(dx.size(), accumulate ? 0.5 : 0.0);
  for (std::int64_t s = 0; s < n; ++s)
    for (std::int64_t o = 0; o < out_c; ++o)
      for (std::int64_t oy = 0; oy < oh; ++oy)
        for (std::int64_t ox = 0; ox < ow; ++ox)
          for (std::int64_t ci = 0; ci < c; ++ci)
            for (std::int64_t t = 0; t < 9; ++t) {
              const std::int64_t iy = oy + t / 3 - pad, ix = ox + t % 3 - pad;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              const double p = static_cast<double>(static_cast<float>(gy[o * ld + s * oh * ow + oy * ow + ox])) *
                               r(wf[(o * c + ci) * 9 + t]);
              const auto i = static_cast<std::size_t>(((s * c + ci) * h + iy) * w + ix);
              want[i] += p;
              mag[i] += std::fabs(p);
            }
  const double u = 0x1p-24, terms = static_cast<double>(9 * out_c + 1), gamma = terms * u / (1 - terms * u);
  for (std::size_t i = 0; i < dx.size(); ++i) {
    double bound = gamma * mag[i];
    if (std::is_same_v<X, bfloat16>) bound += 0x1p-8 * (std::fabs(want[i]) + bound);
    INFO("element " << i);
    REQUIRE(std::fabs(static_cast<double>(static_cast<float>(dx[i])) - want[i]) <= bound);
  }
}

/// The same convolution's weight gradient (weight_grad: the input, of type X, against the
/// output gradient laid out as input_grad takes it), added to dw (starting at 0.5), against
/// double sums as above: each weight sums the products over n oh ow pixels.
template <class Tiles, typename X>
void check_conv3x3_weight_grad(std::int64_t c, std::int64_t out_c, std::int64_t h, std::int64_t w, std::int64_t pad) {
  const std::int64_t n = 3, oh = h + 2 * pad - 2, ow = w + 2 * pad - 2, ld = n * oh * ow;
  const Conv2dGeometry g{n, c, h, w, out_c, 3, 3, 1, 1, pad, pad, oh, ow};
  const auto xf = random_floats(static_cast<std::size_t>(n * c * h * w), 46);
  const auto gf = random_floats(static_cast<std::size_t>(out_c * ld), 47);
  std::vector<X> x(xf.size());
  for (std::size_t i = 0; i < xf.size(); ++i) x[i] = static_cast<X>(xf[i]);
  std::vector<bfloat16> gy(gf.size());
  for (std::size_t i = 0; i < gf.size(); ++i) gy[i] = bfloat16(gf[i]);
  std::vector<float> dw(static_cast<std::size_t>(out_c * c * 9), 0.5f);
  cpu::amx::conv3x3::weight_grad<Tiles>(g, n, cpu::amx::conv3x3::Input<X>{x.data(), h * w, c * h * w},
                                        cpu::amx::conv3x3::Input<bfloat16>{gy.data(), ld, oh * ow}, dw.data());
  const auto r = [](float v) { return static_cast<double>(tinynet::detail::round_to_bf16(v)); };
  const double u = 0x1p-24, terms = static_cast<double>(n * oh * ow + 2), gamma = terms * u / (1 - terms * u);
  for (std::int64_t o = 0; o < out_c; ++o)
    for (std::int64_t ci = 0; ci < c; ++ci)
      for (std::int64_t t = 0; t < 9; ++t) {
        double want = 0.5, mag = 0.5;
        for (std::int64_t s = 0; s < n; ++s)
          for (std::int64_t oy = 0; oy < oh; ++oy)
            for (std::int64_t ox = 0; ox < ow; ++ox) {
              const std::int64_t iy = oy + t / 3 - pad, ix = ox + t % 3 - pad;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              const double p = static_cast<double>(static_cast<float>(gy[o * ld + s * oh * ow + oy * ow + ox])) *
                               r(static_cast<float>(x[((s * c + ci) * h + iy) * w + ix]));
              want += p;
              mag += std::fabs(p);
            }
        INFO("weight " << o << ", " << ci << ", tap " << t);
        REQUIRE(std::fabs(dw[(o * c + ci) * 9 + t] - want) <= gamma * mag);
      }
}

template <class Tiles>
void check_conv3x3_shapes() {
  // 16 channels (half a tile along k), 32, and 48 (a half chunk last); 16, 32 or 48 outputs
  // (one block of 16, one of 32, or 32 then 16); widths and paddings whose rows end inside a
  // block. The emulated tiles (a thousand times slower, and run by the sanitizer builds too)
  // take the cases with every kind of edge once: 16 and 48 channels, paddings 0 and 2.
  constexpr bool every = std::is_same_v<Tiles, cpu::amx::tile::Hardware>;
  const std::vector<std::int64_t> channels =
                                      every ? std::vector<std::int64_t>{16, 32, 48} : std::vector<std::int64_t>{16, 48},
                                  outputs =
                                      every ? std::vector<std::int64_t>{16, 32, 48} : std::vector<std::int64_t>{16, 48},
                                  pads = every ? std::vector<std::int64_t>{0, 1, 2} : std::vector<std::int64_t>{0, 2};
  using Extent = std::pair<std::int64_t, std::int64_t>;
  const std::vector<Extent> extents =
      every ? std::vector<Extent>{{7, 7}, {6, 13}, {3, 20}} : std::vector<Extent>{{6, 13}};
  for (std::int64_t c : channels)
    for (std::int64_t out_c : outputs)
      for (std::int64_t pad : pads) {
        for (auto [h, w] : extents) {
          INFO("c " << c << " out_c " << out_c << " h " << h << " w " << w << " pad " << pad);
          check_conv3x3<Tiles, float, float>(c, out_c, h, w, pad, true, false);
          check_conv3x3<Tiles, bfloat16, bfloat16>(c, out_c, h, w, pad, pad != 1, true);
        }
        INFO("gradients: c " << c << " out_c " << out_c << " pad " << pad);
        check_conv3x3_input_grad<Tiles, bfloat16>(c, out_c, 6, 13, pad, pad != 0);
        check_conv3x3_input_grad<Tiles, float>(c, out_c, 7, 7, pad, pad == 0);
        check_conv3x3_weight_grad<Tiles, bfloat16>(c, out_c, 6, 13, pad);
        check_conv3x3_weight_grad<Tiles, float>(c, out_c, 9, 7, pad);
      }
  // The narrowest grids with an output (3 pixels wide: a block of 16 touches 6 rows).
  check_conv3x3<Tiles, float, float>(16, 16, 8, 1, 1, true, false);
  check_conv3x3<Tiles, bfloat16, bfloat16>(16, 32, 7, 3, 0, true, true);
  check_conv3x3_input_grad<Tiles, bfloat16>(16, 16, 8, 1, 1, true);
  check_conv3x3_weight_grad<Tiles, float>(16, 16, 8, 1, 1);
  if (every) check_conv3x3<Tiles, float, bfloat16>(32, 32, 28, 28, 1, true, true);
  check_conv3x3<Tiles, bfloat16, float>(16, 16, 9, 9, 1, false, false);
}

// The emulated tiles (the instructions' arithmetic in portable code) run the very blocking,
// staging and epilogues the CPU's tiles do: they run wherever the amx level's other
// instructions (AVX512-BF16) are, and the CPU's tiles where the level is in use.
template <class Check>
void on_amx_tiles(const char* what, Check check) {
  if (cpu::detected_isa() < cpu::Isa::avx512_bf16) {
    WARN("no AVX512-BF16 on this CPU: the amx level's " << what << " are not run at all");
    return;
  }
  SECTION("emulated tiles") { check(cpu::amx::tile::Emulated{}); }
  SECTION("the CPU's tiles") {
    if (cpu::isa() != cpu::Isa::amx) {
      WARN("level " << cpu::isa_name(cpu::isa())
                    << ": no AMX tiles here (amx_bf16 in /proc/cpuinfo, granted by the OS), the CPU's tiles are "
                       "not tested");
      return;
    }
    check(cpu::amx::tile::Hardware{});
  }
}

}  // namespace

TEST_CASE("AMX direct 3x3 convolutions (forward, both gradients) against double sums, on emulated tiles and on AMX",
          "[backend][cpu]") {
  on_amx_tiles("convolutions", []<class Tiles>(Tiles) { check_conv3x3_shapes<Tiles>(); });
}

TEST_CASE("AMX tile products over every edge of their blocks, on emulated tiles and on the CPU's where it has AMX",
          "[backend][cpu]") {
  on_amx_tiles("products", []<class Tiles>(Tiles) { check_tile_products<Tiles>(); });
}
#endif

TEST_CASE("bfloat16 operands prepared in place equal those prepared apart", "[backend][cpu]") {
  // conv2d rounds its columns and Winograd's tiles in place, where they lie.
  for (std::int64_t rows : {1, 2, 5, 64})
    for (std::int64_t cols : {1, 16, 33, 577}) {
      INFO("rows " << rows << " cols " << cols);
      const std::int64_t ld = cols + 7;
      const auto src = random_floats(static_cast<std::size_t>(rows * ld), 31);
      const std::int64_t size = cpu::bf16_operand_floats(rows, ld);
      for (int layout = 0; layout < 2; ++layout) {
        auto apart = aligned_floats(size), here = aligned_floats(size);
        std::copy(src.begin(), src.end(), here.get());
        const auto prepare = [&](const float* from, float* to) {
          return layout == 0 ? AT_LEVEL(bf16::rows(rows, cols, from, ld, to))
                             : AT_LEVEL(bf16::pairs(rows, cols, from, ld, to));
        };
        const cpu::Bf16Operand x = prepare(src.data(), apart.get());
        const cpu::Bf16Operand y = prepare(here.get(), here.get());
        REQUIRE(x.ld == y.ld);
        // Native: bfloat16 rows (2 bytes) or pairs of rows (4 bytes); else rounded floats.
        const bool native = AT_LEVEL(bf16::kNative);
        const std::int64_t prepared_rows = native && layout == 1 ? (rows + 1) / 2 : rows;
        const std::size_t bytes = static_cast<std::size_t>(prepared_rows * x.ld) * (native && layout == 0 ? 2 : 4);
        REQUIRE(std::memcmp(x.data, y.data, bytes) == 0);
      }
    }
}

TEST_CASE("conv2d's bfloat16 activations refuse float32 products, forward and backward", "[backend][cpu][errors]") {
  // The kernels have no float32-product path for bfloat16 activations: the entry points
  // say so instead of computing nothing.
  const tinynet::backend::cpu::Tag cpu;
  const tinynet::backend::Conv2dGeometry g{1, 2, 6, 6, 3, 3, 3, 1, 1, 0, 0, 4, 4};
  std::vector<float> x(72), w(54), dx(72), dw(54), scratch(4096);
  std::vector<tinynet::bfloat16> y(48), gy(48);
  constexpr auto f32 = tinynet::backend::Products::as_input;
  CHECK_THROWS_WITH(
      tinynet::backend::cpu::conv2d_forward(cpu, g, x.data(), w.data(), nullptr, y.data(), scratch.data(), false, f32),
      Catch::Contains("bfloat16 products"));
  CHECK_THROWS_WITH(tinynet::backend::cpu::conv2d_backward(cpu, g, x.data(), w.data(), gy.data(), dx.data(), false,
                                                           dw.data(), false, nullptr, false, scratch.data(),
                                                           static_cast<const tinynet::bfloat16*>(nullptr), f32),
                    Catch::Contains("bfloat16 products"));
}
