#include <catch2/catch.hpp>
#include <string>
#include <tinynet/tinynet.hpp>
#include <vector>

#include "ops/op_testing.hpp"
#include "thread_count_restorer.hpp"

using namespace tinynet;
using namespace tinynet::testing;

namespace {

struct ConvCase {
  std::int64_t n, c, h, w, out_c, kh, kw;
  int stride, padding;
};

// Batch 1, odd and non-square inputs, non-square kernels, 1x1 kernels, stride 2,
// padding 1, a kernel as large as the padded input, and batches split into chunks.
// Stride 1 without padding takes the CPU's row-copy im2col and gathering col2im: those
// cases include non-square kernels, a kernel as wide as the input, rows longer than one
// vector register (20, 37), rows of 1, 2, 4 and 8 that im2col packs several to a vector
// (with and without a partial last vector), channel counts that split into chunks, and
// 784 output pixels, more than one chunk of k for the weight gradient's dot products.
const ConvCase kConvCases[] = {
    {1, 1, 5, 5, 1, 3, 3, 1, 0},   {2, 3, 7, 6, 4, 3, 3, 2, 1},  {3, 2, 8, 5, 3, 1, 1, 1, 0},
    {1, 2, 6, 9, 2, 2, 3, 1, 1},   {2, 1, 4, 4, 2, 3, 3, 2, 0},  {1, 1, 3, 3, 1, 5, 5, 1, 1},
    {4, 2, 5, 5, 3, 3, 3, 1, 1},   {3, 2, 7, 6, 3, 2, 3, 1, 0},  {2, 3, 5, 4, 2, 3, 4, 1, 0},
    {5, 2, 22, 20, 3, 3, 3, 1, 0}, {2, 1, 9, 37, 4, 4, 2, 1, 0}, {3, 4, 12, 12, 6, 5, 5, 1, 0},
    {2, 2, 10, 3, 3, 2, 2, 1, 0},  {2, 2, 20, 3, 3, 2, 3, 1, 0}, {1, 1, 30, 30, 2, 3, 3, 1, 0},
};

// Shapes that take Winograd F(2x2, 3x3) in float32 (AVX2 and AVX-512 levels): padding 0, 1 and 2,
// odd output extents (partial 2x2 tiles), tile rows longer than one vector (19 tiles),
// short tile rows several to a vector (1, 3 and 4 tiles; rows of different samples side by
// side), output channels that are not a multiple of the GEMM kernel's 8 rows, a 1x1
// output, and the example network's second convolution.
const ConvCase kWinogradCases[] = {
    {2, 16, 9, 37, 17, 3, 3, 1, 1}, {3, 20, 6, 5, 16, 3, 3, 1, 2},   {1, 16, 3, 3, 16, 3, 3, 1, 0},
    {9, 16, 4, 6, 19, 3, 3, 1, 1},  {2, 32, 26, 26, 64, 3, 3, 1, 0}, {7, 16, 3, 3, 17, 3, 3, 1, 2},
};

// One-channel layers (a direct kernel in float32 with AVX-512): the MNIST networks' first
// convolutions, rows wider than 32 outputs, padding, filters fewer than the kernel's 8,
// non-square kernels.
const ConvCase kOneChannelCases[] = {
    {5, 1, 28, 28, 20, 5, 5, 1, 0}, {3, 1, 28, 28, 32, 3, 3, 1, 0}, {2, 1, 9, 37, 7, 3, 3, 1, 1},
    {4, 1, 6, 5, 3, 5, 5, 1, 2},    {3, 1, 4, 40, 11, 3, 3, 1, 2},  {2, 1, 7, 9, 9, 2, 4, 1, 1},
};

std::int64_t out_extent(std::int64_t in, std::int64_t k, int s, int p) { return (in + 2 * p - k) / s + 1; }

/// y[n,o,y,x] = b[o] + sum_{c,i,j} W[o,c,i,j] x[n,c,y*s+i-p, x*s+j-p], zero outside the input.
std::vector<double> conv_reference(const Tensor& x, const Tensor& w, const Tensor& b, int s, int p) {
  const std::int64_t n = x.size(0), c = x.size(1), h = x.size(2), wd = x.size(3);
  const std::int64_t oc = w.size(0), kh = w.size(2), kw = w.size(3);
  const std::int64_t oh = out_extent(h, kh, s, p), ow = out_extent(wd, kw, s, p);
  const auto vx = values(x), vw = values(w);
  const std::vector<double> vb = b.defined() ? values(b) : std::vector<double>(static_cast<std::size_t>(oc), 0.0);
  std::vector<double> y;
  for (std::int64_t in = 0; in < n; ++in)
    for (std::int64_t o = 0; o < oc; ++o)
      for (std::int64_t oy = 0; oy < oh; ++oy)
        for (std::int64_t ox = 0; ox < ow; ++ox) {
          double acc = vb[static_cast<std::size_t>(o)];
          for (std::int64_t ci = 0; ci < c; ++ci)
            for (std::int64_t i = 0; i < kh; ++i)
              for (std::int64_t j = 0; j < kw; ++j) {
                const std::int64_t iy = oy * s + i - p, ix = ox * s + j - p;
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                acc += vw[static_cast<std::size_t>(((o * c + ci) * kh + i) * kw + j)] *
                       vx[static_cast<std::size_t>(((in * c + ci) * h + iy) * wd + ix)];
              }
          y.push_back(acc);
        }
  return y;
}

/// float32 against the float64 kernels on one shape whose float32 path `uses` reports
/// taken at levels from `from` on (the level in use, TINYNET_CPU_ISA): the output against the reference loop; the
/// values and the gradients of conv2d and conv2d_relu (the input's with `input_grad`); and conv2d_relu exactly
/// relu(conv2d).
void check_float32_kernels(const ConvCase& k, bool (*uses)(const backend::Conv2dGeometry&), backend::cpu::Isa from,
                           bool input_grad, std::uint64_t seed) {
  INFO(get_num_threads() << " threads, x [" << k.n << "," << k.c << "," << k.h << "," << k.w << "] kernel " << k.kh
                         << "x" << k.kw << " out " << k.out_c << " padding " << k.padding
                         << (input_grad ? ", input gradient" : ""));
  const Tensor x64 = random_input({k.n, k.c, k.h, k.w}, seed, false);
  const Tensor w64 = random_input({k.out_c, k.c, k.kh, k.kw}, seed + 1, false);
  const Tensor b64 = random_input({k.out_c}, seed + 2, false);
  backend::Conv2dGeometry g{k.n, k.c, k.h, k.w, k.out_c, k.kh, k.kw, k.stride, k.stride, k.padding, k.padding, 0, 0};
  g.oh = (k.h + 2 * k.padding - k.kh) / k.stride + 1;
  g.ow = (k.w + 2 * k.padding - k.kw) / k.stride + 1;
  CHECK(uses(g) == (static_cast<int>(backend::cpu::isa()) >= static_cast<int>(from)));
  check_close(conv2d(x64.to(DType::float32), w64.to(DType::float32), b64.to(DType::float32), k.stride, k.padding),
              conv_reference(x64, w64, b64, k.stride, k.padding), 1e-5);
  for (bool fused : {false, true}) {
    INFO((fused ? "conv2d_relu" : "conv2d"));
    std::vector<std::vector<double>> outs, grads[2];
    for (DType dt : {DType::float64, DType::float32}) {
      Tensor x = x64.to(dt), w = w64.to(dt).requires_grad_(), b = b64.to(dt).requires_grad_();
      if (input_grad) x.requires_grad_();
      const Tensor y = fused ? conv2d_relu(x, w, b, k.stride, k.padding) : conv2d(x, w, b, k.stride, k.padding);
      y.backward(random_input(y.shape(), seed + 3, false).to(dt));
      outs.push_back(values(y));
      for (const Tensor& t : {x, w, b})
        if (t.requires_grad()) grads[dt == DType::float32].push_back(values(t.grad()));
    }
    check_close(outs[1], outs[0], 1e-5);
    REQUIRE(grads[1].size() == grads[0].size());
    for (std::size_t i = 0; i < grads[0].size(); ++i) check_close(grads[1][i], grads[0][i], 1e-4);
  }
  const Tensor x = x64.to(DType::float32), w = w64.to(DType::float32), b = b64.to(DType::float32);
  CHECK(values(conv2d_relu(x, w, b, k.stride, k.padding)) == values(relu(conv2d(x, w, b, k.stride, k.padding))));
}

}  // namespace

// The case a failure happened in.
#define TINYNET_CONV_CASE_INFO(k)                                                                              \
  INFO("x [" << k.n << "," << k.c << "," << k.h << "," << k.w << "] kernel " << k.kh << "x" << k.kw << " out " \
             << k.out_c << " stride " << k.stride << " padding " << k.padding)

TEST_CASE("conv2d: forward matches a direct convolution loop", "[ops][conv2d]") {
  for (const auto& k : kConvCases) {
    TINYNET_CONV_CASE_INFO(k);
    const Tensor x = random_input({k.n, k.c, k.h, k.w}, 1, false);
    const Tensor w = random_input({k.out_c, k.c, k.kh, k.kw}, 2, false);
    const Tensor b = random_input({k.out_c}, 3, false);
    const Tensor y = conv2d(x, w, b, k.stride, k.padding);
    CHECK(y.shape() ==
          Shape{k.n, k.out_c, out_extent(k.h, k.kh, k.stride, k.padding), out_extent(k.w, k.kw, k.stride, k.padding)});
    check_close(y, conv_reference(x, w, b, k.stride, k.padding), 1e-13);
    check_close(conv2d(x, w, Tensor(), k.stride, k.padding), conv_reference(x, w, Tensor(), k.stride, k.padding),
                1e-13);
    check_close(conv2d(x.to(DType::float32), w.to(DType::float32), b.to(DType::float32), k.stride, k.padding),
                conv_reference(x, w, b, k.stride, k.padding), 1e-5);
  }
}

// Three test cases, so that CTest runs them side by side: under the sanitizers these checks
// are the slowest unit tests. With a gradient not needed the kernel skips its computation:
// each one alone is checked too.
TEST_CASE("conv2d: gradients of input, weight and bias match finite differences", "[ops][conv2d][gradcheck]") {
  for (const auto& k : kConvCases) {
    TINYNET_CONV_CASE_INFO(k);
    const auto fn = [&](std::span<const Tensor> in) { return conv2d(in[0], in[1], in[2], k.stride, k.padding); };
    check_gradients(fn, {random_input({k.n, k.c, k.h, k.w}, 4), random_input({k.out_c, k.c, k.kh, k.kw}, 5),
                         random_input({k.out_c}, 6)});
  }
}

TEST_CASE("conv2d: the input's gradient alone matches finite differences", "[ops][conv2d][gradcheck]") {
  for (const auto& k : kConvCases) {
    TINYNET_CONV_CASE_INFO(k);
    const auto fn = [&](std::span<const Tensor> in) { return conv2d(in[0], in[1], in[2], k.stride, k.padding); };
    check_gradients(fn, {random_input({k.n, k.c, k.h, k.w}, 7), random_input({k.out_c, k.c, k.kh, k.kw}, 8, false),
                         random_input({k.out_c}, 9, false)});
  }
}

TEST_CASE("conv2d: the weight's gradient alone, without a bias, matches finite differences",
          "[ops][conv2d][gradcheck]") {
  for (const auto& k : kConvCases) {
    TINYNET_CONV_CASE_INFO(k);
    const auto fn = [&](std::span<const Tensor> in) { return conv2d(in[0], in[1], in[2], k.stride, k.padding); };
    check_gradients(
        fn, {random_input({k.n, k.c, k.h, k.w}, 10, false), random_input({k.out_c, k.c, k.kh, k.kw}, 11), Tensor()});
  }
}

TEST_CASE("conv2d: float32 gradients agree with float64 ones", "[ops][conv2d]") {
  // The float32 kernels take vectorised paths (masked AVX-512 runs) that gradcheck, in
  // double, does not reach.
  for (const auto& k : kConvCases) {
    TINYNET_CONV_CASE_INFO(k);
    std::vector<std::vector<double>> grads[2];
    for (DType dt : {DType::float64, DType::float32}) {
      Tensor x = random_input({k.n, k.c, k.h, k.w}, 16, false).to(dt).requires_grad_();
      Tensor w = random_input({k.out_c, k.c, k.kh, k.kw}, 17, false).to(dt).requires_grad_();
      Tensor b = random_input({k.out_c}, 18, false).to(dt).requires_grad_();
      const Tensor y = conv2d(x, w, b, k.stride, k.padding);
      y.backward(random_input(y.shape(), 19, false).to(dt));
      for (const Tensor& t : {x, w, b}) grads[dt == DType::float32].push_back(values(t.grad()));
    }
    for (std::size_t i = 0; i < 3; ++i) check_close(grads[1][i], grads[0][i], 1e-4);
  }
}

TEST_CASE("conv2d_relu: the values and gradients of relu(conv2d(...))", "[ops][conv2d]") {
  // Both dtypes (float32 takes the vectorised runs), wide and general layouts, with and
  // without bias; the fused op must agree exactly with the two ops it replaces.
  for (const auto& k : kConvCases)
    for (DType dt : {DType::float64, DType::float32})
      for (bool with_bias : {true, false}) {
        INFO("x [" << k.n << "," << k.c << "," << k.h << "," << k.w << "] kernel " << k.kh << "x" << k.kw << " stride "
                   << k.stride << " padding " << k.padding << " " << dt << (with_bias ? " bias" : ""));
        std::vector<std::vector<double>> outs, grads;
        for (bool fused : {false, true}) {
          Tensor x = random_input({k.n, k.c, k.h, k.w}, 20, false).to(dt).requires_grad_();
          Tensor w = random_input({k.out_c, k.c, k.kh, k.kw}, 21, false).to(dt).requires_grad_();
          Tensor b = with_bias ? random_input({k.out_c}, 22, false).to(dt).requires_grad_() : Tensor();
          const Tensor y =
              fused ? conv2d_relu(x, w, b, k.stride, k.padding) : relu(conv2d(x, w, b, k.stride, k.padding));
          CHECK(std::string(y.grad_fn()->name()) == (fused ? "conv2d_relu" : "relu"));
          y.backward(random_input(y.shape(), 23, false).to(dt));
          outs.push_back(values(y));
          for (const Tensor& t : {x, w, b})
            if (t.defined()) grads.push_back(values(t.grad()));
        }
        CHECK(outs[1] == outs[0]);
        const std::size_t half = grads.size() / 2;
        for (std::size_t i = 0; i < half; ++i)
          check_close(grads[half + i], grads[i], dt == DType::float32 ? 1e-6 : 1e-14);
      }
  const auto fn = [](std::span<const Tensor> in) { return conv2d_relu(in[0], in[1], in[2]); };
  check_gradients(fn, {random_input({2, 2, 6, 5}, 24), random_input({3, 2, 3, 3}, 25), random_input({3}, 26)});
}

TEST_CASE("conv2d: one and two threads give the reference values", "[ops][conv2d]") {
  // With two threads a batch of 5 is split into two chunks whose weight gradients are summed.
  ThreadCountRestorer restore;
  const Tensor gy = random_input({5, 4, 4, 4}, 12, false);
  std::vector<std::vector<double>> grads;
  for (int threads : {1, 2}) {
    INFO(threads << " threads");
    set_num_threads(threads);
    const Tensor x = random_input({5, 3, 8, 8}, 13);
    const Tensor w = random_input({4, 3, 3, 3}, 14);
    const Tensor b = random_input({4}, 15);
    const Tensor y = conv2d(x, w, b, 2, 1);
    check_close(y, conv_reference(x, w, b, 2, 1), 1e-13);
    y.backward(gy);
    for (const Tensor& t : {x, w, b}) grads.push_back(values(t.grad()));
  }
  for (std::size_t i = 0; i < 3; ++i) check_close(grads[i + 3], grads[i], 1e-13);
}

TEST_CASE("conv2d: Winograd shapes give the reference values and gradients", "[ops][conv2d]") {
  ThreadCountRestorer restore;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const auto& k : kWinogradCases)
      check_float32_kernels(k, backend::cpu::uses_winograd<float>, backend::cpu::Isa::avx2, true, 30);
  }
}

TEST_CASE("conv2d: one-channel layers give the reference values and gradients", "[ops][conv2d]") {
  // With and without the input's gradient (a first layer on data needs none).
  ThreadCountRestorer restore;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const auto& k : kOneChannelCases)
      for (bool input_grad : {false, true})
        check_float32_kernels(k, backend::cpu::uses_one_channel<float>, backend::cpu::Isa::avx2, input_grad, 40);
  }
}

TEST_CASE("conv2d: misuse throws errors that name the problem", "[ops][conv2d][errors]") {
  const Tensor x = zeros({2, 3, 8, 8});
  const Tensor w = zeros({4, 3, 3, 3});
  CHECK_THROWS_AS(conv2d(zeros({3, 8, 8}), w), ShapeError);
  CHECK_THROWS_WITH(conv2d(zeros({3, 8, 8}), w),
                    Catch::Contains("conv2d") && Catch::Contains("input of rank 4") && Catch::Contains("[3, 8, 8]"));
  CHECK_THROWS_AS(conv2d(x, zeros({4, 3, 3})), ShapeError);
  CHECK_THROWS_WITH(conv2d(x, zeros({4, 3, 3})), Catch::Contains("weight of rank 4"));
  CHECK_THROWS_AS(conv2d(x, zeros({4, 2, 3, 3})), ShapeError);
  CHECK_THROWS_WITH(conv2d(x, zeros({4, 2, 3, 3})),
                    Catch::Contains("input has 3 channels") && Catch::Contains("weight expects 2"));
  CHECK_THROWS_AS(conv2d(x, zeros({4, 3, 0, 3})), ShapeError);
  CHECK_THROWS_WITH(conv2d(x, zeros({4, 3, 3, 0})),
                    Catch::Contains("weight of shape [4, 3, 3, 0] has an empty kernel"));
  CHECK_THROWS_AS(conv2d(x, w, Tensor(), 0), ValueError);
  CHECK_THROWS_WITH(conv2d(x, w, Tensor(), 0), Catch::Contains("stride must be >= 1, got 0"));
  CHECK_THROWS_AS(conv2d(x, w, Tensor(), -2), ValueError);
  CHECK_THROWS_AS(conv2d(x, w, Tensor(), 1, -1), ValueError);
  CHECK_THROWS_WITH(conv2d(x, w, Tensor(), 1, -1), Catch::Contains("padding must be >= 0, got -1"));
  CHECK_THROWS_AS(conv2d(zeros({1, 3, 2, 8}), w), ShapeError);
  CHECK_THROWS_WITH(conv2d(zeros({1, 3, 2, 8}), w), Catch::Contains("kernel 3x3 is larger than the padded input 2x8"));
  CHECK_THROWS_AS(conv2d(zeros({1, 3, 4, 4}), zeros({1, 3, 7, 7}), Tensor(), 1, 1), ShapeError);
  CHECK_THROWS_WITH(conv2d(zeros({1, 3, 4, 4}), zeros({1, 3, 7, 7}), Tensor(), 1, 1),
                    Catch::Contains("larger than the padded input 6x6"));
  CHECK_THROWS_AS(conv2d(x, w, zeros({3})), ShapeError);
  CHECK_THROWS_WITH(conv2d(x, w, zeros({3})), Catch::Contains("bias has shape [3], expected [4]"));
  CHECK_THROWS_AS(conv2d(x, zeros({4, 3, 3, 3}, {.dtype = DType::float64})), TypeError);
  CHECK_THROWS_WITH(conv2d(x, zeros({4, 3, 3, 3}, {.dtype = DType::float64})),
                    Catch::Contains("weight is float64 but the input is float32"));
  CHECK_THROWS_AS(conv2d(zeros({2, 3, 8, 8}, {.dtype = DType::int32}), w), TypeError);
}
