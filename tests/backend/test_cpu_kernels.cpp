// The CPU backend's own small kernels against double-precision loops, over the remainders
// their blocking leaves (rows and columns not a multiple of the register block, k not a
// multiple of 16) and leading dimensions wider than the matrices, whose padding must stay
// untouched.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <tinynet/backend/cpu/gemm_nt.hpp>
#include <tinynet/backend/cpu/gemm_rows.hpp>
#include <tinynet/backend/cpu/short_runs.hpp>

#if defined(TINYNET_CPU_AVX512)

namespace {

constexpr float kPad = -12345.0f;  // in the padding of C's rows; must survive

std::vector<float> random_floats(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& e : v) e = u(rng);
  return v;
}

}  // namespace

TEST_CASE("gemm_nt: C += A B^T for every remainder of its 4 x 4 blocks", "[backend][cpu]") {
  for (std::int64_t m = 1; m <= 9; ++m)
    for (std::int64_t n = 1; n <= 9; ++n)
      for (std::int64_t k : {1, 15, 16, 17, 40, 600, 1100}) {
        INFO("m " << m << " n " << n << " k " << k);
        const std::int64_t lda = k + 3, ldb = k + 5, ldc = n + 2;
        const auto a = random_floats(static_cast<std::size_t>(m * lda), 1), b = random_floats(static_cast<std::size_t>(n * ldb), 2);
        auto c = random_floats(static_cast<std::size_t>(m * ldc), 3);
        for (std::int64_t o = 0; o < m; ++o) c[o * ldc + n] = c[o * ldc + n + 1] = kPad;
        const auto c0 = c;
        tinynet::backend::cpu::gemm_nt(m, n, k, a.data(), lda, b.data(), ldb, c.data(), ldc);
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

TEST_CASE("gemm_rows: C = A B (+ bias, ReLU) for every remainder of its 8 x 48 blocks", "[backend][cpu]") {
  for (std::int64_t m : {1, 3, 7, 8, 9, 17})
    for (std::int64_t n : {1, 15, 16, 47, 48, 49, 100})
      for (std::int64_t k : {1, 7, 50})
        for (int mode = 0; mode < 3; ++mode) {  // plain, + bias, + bias and ReLU
          INFO("m " << m << " n " << n << " k " << k << " mode " << mode);
          const std::int64_t lda = k + 1, ldb = n + 3, ldc = n + 2;
          const auto a = random_floats(static_cast<std::size_t>(m * lda), 4), b = random_floats(static_cast<std::size_t>(k * ldb), 5);
          const auto bias = random_floats(static_cast<std::size_t>(m), 6);
          std::vector<float> c(static_cast<std::size_t>(m * ldc), kPad);
          tinynet::backend::cpu::gemm_rows(m, n, k, a.data(), lda, b.data(), ldb, c.data(), ldc,
                                           mode > 0 ? bias.data() : nullptr, mode == 2);
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

TEST_CASE("pack_rows: rows gathered into one run, several to a vector or one at a time", "[backend][cpu]") {
  for (std::int64_t n = 1; n <= 17; ++n)
    for (std::int64_t rows = 1; rows <= 20; ++rows) {
      INFO("rows " << rows << " of " << n);
      const std::int64_t stride = n + 3;
      const auto src = random_floats(static_cast<std::size_t>(rows * stride), 7);
      std::vector<float> dst(static_cast<std::size_t>(rows * n + 1), kPad);
      tinynet::backend::cpu::pack_rows(dst.data(), src.data(), stride, rows, n);
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t x = 0; x < n; ++x) REQUIRE(dst[r * n + x] == src[r * stride + x]);
      REQUIRE(dst[rows * n] == kPad);
    }
}

#endif  // TINYNET_CPU_AVX512
