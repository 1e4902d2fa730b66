// Times AMX tile products fed by the operand layouts of the direct 3x3 convolutions
// (backend/cpu/simd/amx_conv3x3.inl) and of their alternatives, on data in cache: where a
// tile load's 16 rows of 64 bytes start inside a cache line, each row reads two lines. One
// thread; prints one JSON object per layout: median nanoseconds per tile product over the
// repetitions. Reports itself skipped on a CPU (or OS) without AMX.
//   tile_loads [--reps R]
#include <immintrin.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <tinynet/backend/cpu/isa.hpp>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct alignas(64) TileConfig {  // palette 1: every tile 16 rows of 64 bytes
  std::uint8_t palette = 1, start_row = 0, reserved[14] = {};
  std::uint16_t bytes_per_row[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  std::uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};

// ResNet-20's first stage: 16 channels, a 28x28 image on a grid 30 pixels wide; kPlane, a
// padded plane's pixels as the kernels lay them out ((30 + 1) rows, and 66 after);
// kSpan, the output's rows on the grid in whole tiles of 32 pixels.
constexpr std::int64_t kWidth = 30, kPixels = 28 * kWidth, kPlane = 31 * kWidth + 66, kSpan = 864;
constexpr std::int64_t kBlocks = (kPixels + 31) / 32;  // blocks of 32 pixels over the image
constexpr std::int64_t kTaps[6] = {0, 2, kWidth, kWidth + 2, 2 * kWidth, 2 * kWidth + 2};  // paired taps' shifts

/// bfloat16 ones, 32 more than asked for so that `aligned` can start them on a line (the
/// values do not change the time).
std::vector<std::uint16_t> ones(std::int64_t words) { return std::vector<std::uint16_t>(words + 32, 0x3f80); }
const void* aligned(const std::vector<std::uint16_t>& v) {
  return reinterpret_cast<const void*>((reinterpret_cast<std::uintptr_t>(v.data()) + 63) & ~std::uintptr_t{63});
}

/// Median ns per product of `pass` (which returns its products) over `reps` passes, after
/// one untimed pass.
template <typename Pass>
double time_products(int reps, Pass pass) {
  pass();
  std::vector<double> ns;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    const std::int64_t products = pass();
    ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / static_cast<double>(products));
  }
  std::sort(ns.begin(), ns.end());
  return ns.size() % 2 == 1 ? ns[ns.size() / 2] : 0.5 * (ns[ns.size() / 2 - 1] + ns[ns.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"AMX tile products by operand layout, one thread"};
  int reps = 15;
  app.add_option("--reps", reps)->check(CLI::Range(1, 100000));
  CLI11_PARSE(app, argc, argv);
  if (tinynet::backend::cpu::isa() != tinynet::backend::cpu::Isa::amx) {
    std::printf(
        "{\"skipped\": \"the CPU level in use is %s, not amx (no AMX, refused by the OS, or capped by "
        "TINYNET_CPU_ISA)\"}\n",
        tinynet::backend::cpu::isa_name(tinynet::backend::cpu::isa()));
    return 0;
  }
  static constexpr TileConfig config{};
  _tile_loadconfig(&config);
  constexpr int kSweeps = 50;  // passes over the image per repetition
  // The operands, each as the kernels (or the alternative) lay it out:
  const auto weights = ones(6 * 512);                  // a tile of filters per group of taps
  const auto pair_planes = ones(2 * 16 * kPlane);      // forward: 16 planes of channel pairs
  const auto input_rows = ones(16 * kPlane);           // weight gradient: 16 channels' padded rows
  const auto grad_rows = ones(16 * kSpan);             // shift on B: 16 output channels' rows
  const auto grad_pairs = ones(16 * kSpan);            // and the weight gradient's pixel pairs
  const auto input_pairs = ones(2 * 2 * kPlane * 16);  // from even and from odd pixels
  const auto channels_last = ones(kPlane * 16);        // forward: 16 channels a pixel
  const auto* w = static_cast<const std::uint16_t*>(aligned(weights));
  const auto* planes = static_cast<const std::uint32_t*>(aligned(pair_planes));
  const auto* rows = static_cast<const std::uint16_t*>(aligned(input_rows));
  const auto* gy = static_cast<const std::uint16_t*>(aligned(grad_rows));
  const auto* gy_pairs = static_cast<const std::uint32_t*>(aligned(grad_pairs));
  const auto* x_pairs = static_cast<const std::uint32_t*>(aligned(input_pairs));
  const auto* pixels = static_cast<const std::uint16_t*>(aligned(channels_last));
  alignas(64) float sums[256];
  const auto report = [](const char* layout, double ns) {
    std::printf("{\"layout\": \"%s\", \"ns_per_product\": %.2f}\n", layout, ns);
  };

  report("products alone", time_products(reps, [&] {
           _tile_loadd(4, w, 64);
           _tile_loadd(6, w + 512, 64);
           for (std::int64_t i = 0; i < kSweeps * 3 * kBlocks; ++i) {
             _tile_dpbf16ps(0, 4, 6);
             _tile_dpbf16ps(1, 4, 6);
             _tile_dpbf16ps(2, 4, 6);
           }
           _tile_stored(0, sums, 64);
           return kSweeps * 3 * kBlocks * 3;
         }));
  // kSweeps passes over the image's blocks of 32 pixels, `block(q)` issuing one block's
  // `products` into tiles 0-2.
  const auto sweeps = [&](std::int64_t products, auto block) {
    return time_products(reps, [&] {
      for (int s = 0; s < kSweeps; ++s)
        for (std::int64_t b = 0; b < kBlocks; ++b) block(32 * b);
      _tile_stored(0, sums, 64);
      return kSweeps * kBlocks * products;
    });
  };
  // The forward pass: two tiles of sums over the six groups of taps, `taps(q, t)` issuing
  // the four products of groups t and t + 1.
  const auto forward = [&](auto taps) {
    return sweeps(12, [&](std::int64_t q) {
      _tile_zero(0);
      _tile_zero(1);
      for (int t = 0; t < 6; t += 2) taps(q, t);
      _tile_stored(0, sums, 64);
    });
  };
  // The weight gradient: A the input's rows shifted by each tap of a row (rows a plane
  // apart, 1992 bytes: they start anywhere in a line), B the output gradient's pixel pairs.
  report("weight gradient, shift on A", sweeps(3, [&](std::int64_t q) {
           _tile_loadd(6, gy_pairs + q / 2 * 16, 64);
           _tile_loadd(4, rows + q, 2 * kPlane);
           _tile_dpbf16ps(0, 4, 6);
           _tile_loadd(5, rows + q + 1, 2 * kPlane);
           _tile_dpbf16ps(1, 5, 6);
           _tile_loadd(4, rows + q + 2, 2 * kPlane);
           _tile_dpbf16ps(2, 4, 6);
         }));
  // The alternative: A the output gradient's rows (1728 bytes apart: whole lines), B the
  // input's pixel pairs by channels from an even or an odd pixel (64-byte rows one after
  // another).
  const auto pairs_from = [&](std::int64_t shift) { return x_pairs + ((shift & 1) * kPlane + shift / 2) * 16; };
  report("weight gradient, shift on B", sweeps(3, [&](std::int64_t q) {
           _tile_loadd(4, gy + q, 2 * kSpan);
           _tile_loadd(6, pairs_from(q), 64);
           _tile_dpbf16ps(0, 4, 6);
           _tile_loadd(7, pairs_from(q + 1), 64);
           _tile_dpbf16ps(1, 4, 7);
           _tile_loadd(6, pairs_from(q + 2), 64);
           _tile_dpbf16ps(2, 4, 6);
         }));
  // The forward pass as the kernels run it: A the filters, B 16 pixels of each channel
  // pair's plane from the tap's shift (rows a plane apart, 3984 bytes: they start anywhere
  // in a line).
  report("forward, pair planes", forward([&](std::int64_t q, int t) {
           const std::uint32_t* b = planes + q + kTaps[t];
           const std::uint32_t* next = planes + q + kTaps[t + 1];
           _tile_loadd(4, w + t * 512, 64);
           _tile_loadd(6, b, 4 * kPlane);
           _tile_dpbf16ps(0, 4, 6);
           _tile_loadd(7, b + 16, 4 * kPlane);
           _tile_dpbf16ps(1, 4, 7);
           _tile_loadd(5, w + (t + 1) * 512, 64);
           _tile_loadd(6, next, 4 * kPlane);
           _tile_dpbf16ps(0, 5, 6);
           _tile_loadd(7, next + 16, 4 * kPlane);
           _tile_dpbf16ps(1, 5, 7);
         }));
  // Channels last: A 16 pixels by the 16 channels of two neighbouring taps (rows 32 bytes
  // apart, one after another: every other one crosses a line), B the filters; the sums
  // pixels by output channels.
  report("forward, channels last", forward([&](std::int64_t q, int t) {
           const std::uint16_t* a = pixels + (q + kTaps[t]) * 16;
           const std::uint16_t* next = pixels + (q + kTaps[t + 1]) * 16;
           _tile_loadd(6, w + t * 512, 64);
           _tile_loadd(4, a, 32);
           _tile_dpbf16ps(0, 4, 6);
           _tile_loadd(5, a + 16 * 16, 32);
           _tile_dpbf16ps(1, 5, 6);
           _tile_loadd(7, w + (t + 1) * 512, 64);
           _tile_loadd(4, next, 32);
           _tile_dpbf16ps(0, 4, 7);
           _tile_loadd(5, next + 16 * 16, 32);
           _tile_dpbf16ps(1, 5, 7);
         }));
  _tile_release();
  return 0;
}
