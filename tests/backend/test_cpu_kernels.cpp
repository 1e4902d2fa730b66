// The CPU backend's own small kernels against double-precision loops, at the vector level
// in use (CTest runs this file once per level the machine has, with TINYNET_CPU_ISA), over the remainders
// their blocking leaves (rows and columns not a multiple of the register block, k not a
// multiple of 16) and leading dimensions wider than the matrices, whose padding must stay
// untouched; then each float32 convolution path through the backend's entry points. The
// same file is built a second time without optimisation (backend_tests_O0), as in a Debug
// build: nothing inlined or unrolled, so an intrinsic that needs a constant would fail to
// compile there.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <tinynet/backend/cpu/conv2d.hpp>
#include <tinynet/backend/cpu/kernels_for_isa.hpp>
#include <vector>

namespace {

namespace cpu = tinynet::backend::cpu;

/// Calls `call` (a function name and its arguments) in the namespace of the level in use.
#if defined(TINYNET_CPU_X86)
#define AT_LEVEL(call)                                          \
  (cpu::isa() == cpu::Isa::avx512_bf16 ? cpu::avx512_bf16::call \
   : cpu::isa() == cpu::Isa::avx512    ? cpu::avx512::call      \
   : cpu::isa() == cpu::Isa::avx2      ? cpu::avx2::call        \
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
#define AT_VECTOR_LEVEL(call)                                   \
  (cpu::isa() == cpu::Isa::avx512_bf16 ? cpu::avx512_bf16::call \
   : cpu::isa() == cpu::Isa::avx512    ? cpu::avx512::call      \
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

TEST_CASE("conv2d kernels: each float32 path against double loops", "[backend][cpu]") {
  using tinynet::backend::Conv2dGeometry;
  const tinynet::backend::cpu::Tag cpu;
  // Winograd F(2x2, 3x3) with padding; the one-channel direct kernel; im2col with output
  // rows of 8 packed two to a vector, samples side by side, and the dot-product kernel.
  // {n, c, h, w, out_c, kh, kw, stride h, w, padding h, w, oh, ow}
  const Conv2dGeometry geometry[] = {{2, 16, 6, 7, 17, 3, 3, 1, 1, 1, 1, 6, 7},
                                     {2, 1, 9, 11, 5, 5, 5, 1, 1, 0, 0, 5, 7},
                                     {3, 4, 12, 12, 6, 5, 5, 1, 1, 0, 0, 8, 8}};
  // Winograd and the one-channel kernel exist at the avx2 and avx512 levels; at baseline
  // im2col + GEMM.
  CHECK(tinynet::backend::cpu::uses_winograd<float>(geometry[0]) == (cpu::isa() != cpu::Isa::baseline));
  CHECK(tinynet::backend::cpu::uses_one_channel<float>(geometry[1]) == (cpu::isa() != cpu::Isa::baseline));
  CHECK(tinynet::backend::cpu::cpu_group(geometry[2]) == 3);
  for (std::size_t t = 0; t < 3; ++t) {
    const Conv2dGeometry& g = geometry[t];
    INFO("case " << t);
    const std::int64_t oh = g.oh, ow = g.ow, xs = g.n * g.c * g.h * g.w, ws = g.out_c * g.c * g.kh * g.kh,
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
      return double(w[static_cast<std::size_t>(((o * g.c + ci) * g.kh + i) * g.kh + j)]);
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
                for (std::int64_t j = 0; j < g.kh; ++j) {
                  const std::int64_t iy = oy + i - g.ph, ix = ox + j - g.ph;
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
          for (std::int64_t j = 0; j < g.kh; ++j) {
            double want = 0, scale = 0;
            for (std::int64_t n = 0; n < g.n; ++n)
              for (std::int64_t oy = 0; oy < oh; ++oy)
                for (std::int64_t ox = 0; ox < ow; ++ox) {
                  const std::int64_t iy = oy + i - g.ph, ix = ox + j - g.ph;
                  if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                  want += GY(n, o, oy, ox) * X(n, ci, iy, ix);
                  scale += std::fabs(GY(n, o, oy, ox) * X(n, ci, iy, ix));
                }
            check_sum(dw[static_cast<std::size_t>(((o * g.c + ci) * g.kh + i) * g.kh + j)], want, scale);
          }
    }
    for (std::size_t i = 0; i < want_dx.size(); ++i) check_sum(dx[i], want_dx[i], scale_dx[i]);
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
  if (cpu::isa() != cpu::Isa::avx512_bf16) {
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

TEST_CASE("bfloat16 products: gemm_rows and gemm_nt against double sums of the rounded operands", "[backend][cpu]") {
  // Operands rounded to bfloat16 (8 significant bits) multiply exactly in float32, so the
  // only error left is float32 summation of k terms: |got - want| <= gamma_k * sum |a b|,
  // gamma_k = k u / (1 - k u), u = 2^-24 (Higham, Accuracy and Stability, 3.1), whatever
  // the order; the bias adds one term. Native (vdpbf16ps) where the level in use has it.
  INFO("level " << cpu::isa_name(cpu::isa()) << (AT_LEVEL(bf16::kNative) ? ", vdpbf16ps" : ", rounded in float32"));
  const auto gamma = [](std::int64_t k) { return k * 0x1p-24 / (1 - k * 0x1p-24); };
  const auto r = [](float v) { return static_cast<double>(tinynet::detail::round_to_bf16(v)); };
  for (std::int64_t m : {1, 7, 9, 17})
    for (std::int64_t n : {1, 15, 16, 47, 49, 100})
      for (std::int64_t k : {1, 2, 3, 31, 33, 577, 1600}) {
        INFO("m " << m << " n " << n << " k " << k);
        const std::int64_t lda = k + 3, ldb = n + 5, ldc = n + 2;
        const auto a = random_floats(static_cast<std::size_t>(m * lda), 21),
                   b = random_floats(static_cast<std::size_t>(k * ldb), 22),
                   bias = random_floats(static_cast<std::size_t>(m), 23);
        std::vector<float> bt(static_cast<std::size_t>(n * k));  // B^T, for gemm_nt
        for (std::int64_t p = 0; p < k; ++p)
          for (std::int64_t j = 0; j < n; ++j) bt[j * k + p] = b[p * ldb + j];
        auto buf_a = aligned_floats(cpu::bf16_operand_floats(m, k)),
             buf_b = aligned_floats(cpu::bf16_operand_floats(k, n)),
             buf_bt = aligned_floats(cpu::bf16_operand_floats(n, k));
        const auto a16 = AT_LEVEL(bf16::rows(m, k, a.data(), lda, buf_a.get()));
        const auto b16 = AT_LEVEL(bf16::pairs(k, n, b.data(), ldb, buf_b.get()));
        const auto bt16 = AT_LEVEL(bf16::rows(n, k, bt.data(), k, buf_bt.get()));
        for (bool relu : {false, true}) {
          std::vector<float> c(static_cast<std::size_t>(m * ldc), kPad), c_nt(static_cast<std::size_t>(m * ldc), 0.5f);
          AT_LEVEL(bf16::gemm_rows(m, n, k, a16, b16, c.data(), ldc, bias.data(), relu, true));
          AT_LEVEL(bf16::gemm_nt(m, n, k, a16, bt16, c_nt.data(), ldc));
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
              REQUIRE(std::fabs(c_nt[i * ldc + j] - (want + 0.5)) <= gamma(k + 1) * (mag + 0.5));
            }
            REQUIRE(c[i * ldc + n] == kPad);  // the padding of C's rows stays untouched
            REQUIRE(c_nt[i * ldc + n] == 0.5f);
          }
        }
      }
}

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
