/// \file
/// AMX's eight tile registers, as the tile products (simd/amx_products.inl) use them: each
/// configured as 16 rows of 64 bytes (16 floats, or 16 pairs of bfloat16), loaded from rows
/// any number of bytes apart, multiplied by `tdpbf16ps`. Two implementations with one
/// interface: `Hardware`, the CPU's, and `Emulated`, the instructions' semantics
/// (Intel SDM, TDPBF16PS) in portable code, so that the products' blocking and edges are
/// tested on any CPU with AVX512-BF16, and both where there are tiles.
/// Only at the amx level.

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AMX

namespace tile {

/// Every tile's shape: 16 rows of 64 bytes. A C tile holds 16 x 16 floats, an A tile 16 rows
/// of 16 bfloat16 pairs (32 values along k), a B tile 16 rows of pairs along k by 16 columns.
inline constexpr int kRows = 16, kRowBytes = 64;

/// The 64-byte operand of ldtilecfg: palette 1, every tile 16 x 64 bytes.
struct alignas(64) TileConfig {
  std::uint8_t palette = 1, start_row = 0, reserved[14] = {};
  std::uint16_t bytes_per_row[16] = {kRowBytes, kRowBytes, kRowBytes, kRowBytes,
                                     kRowBytes, kRowBytes, kRowBytes, kRowBytes};
  std::uint8_t rows[16] = {kRows, kRows, kRows, kRows, kRows, kRows, kRows, kRows};
};
static_assert(sizeof(TileConfig) == 64, "ldtilecfg reads 64 bytes");

// GCC's tile intrinsics paste the register number into the instruction's text, so each
// register is named by a literal: these expand one `if constexpr` per register.
#define TINYNET_TILES_0_7(F) F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7)
#define TINYNET_TILE_LOAD(t) \
  if constexpr (T == t) _tile_loadd(t, p, stride);
#define TINYNET_TILE_STORE(t) \
  if constexpr (T == t) _tile_stored(t, p, stride);
#define TINYNET_TILE_ZERO(t) \
  if constexpr (T == t) _tile_zero(t);
#define TINYNET_TILE_DOT(c, a, b) \
  if constexpr (C == c && A == a && B == b) _tile_dpbf16ps(c, a, b);
#define TINYNET_TILE_DOTS_OF(c) \
  TINYNET_TILE_DOT(c, 4, 6) TINYNET_TILE_DOT(c, 4, 7) TINYNET_TILE_DOT(c, 5, 6) TINYNET_TILE_DOT(c, 5, 7)

/// The CPU's tiles: the process must have been granted them (cpu::isa() asks the OS).
struct Hardware {
  /// Loads the configuration unless the thread's tiles already have it (kept from the last
  /// product; checked, since other code in the thread may configure the tiles otherwise).
  /// Loading it zeroes every tile.
  static void configure() {
    static constexpr TileConfig wanted{};
    TileConfig now;
    _tile_storeconfig(&now);
    memory_barrier();
    if (std::memcmp(&now, &wanted, sizeof now) != 0) _tile_loadconfig(&wanted);
  }
  template <int T>
  static void zero() {
    TINYNET_TILES_0_7(TINYNET_TILE_ZERO)
  }
  /// Tile T = 16 rows of 64 bytes from p, `stride` bytes apart.
  template <int T>
  static void load(const void* p, std::int64_t stride) {
    memory_barrier();
    TINYNET_TILES_0_7(TINYNET_TILE_LOAD)
    memory_barrier();
  }
  template <int T>
  static void store(void* p, std::int64_t stride) {
    TINYNET_TILES_0_7(TINYNET_TILE_STORE)
  }
  /// C += A B: C a float tile (0-3), A a tile of pairs along k (4, 5), B one of pairs by
  /// columns (6, 7).
  template <int C, int A, int B>
  static void dot() {
    static_assert(C >= 0 && C < 4 && (A == 4 || A == 5) && (B == 6 || B == 7),
                  "the tile products keep C in tiles 0-3, A in 4-5, B in 6-7");
    TINYNET_TILE_DOTS_OF(0) TINYNET_TILE_DOTS_OF(1) TINYNET_TILE_DOTS_OF(2) TINYNET_TILE_DOTS_OF(3)
  }

 private:
  /// GCC's tileloadd and sttilecfg tell the compiler of no memory they read, or of only 8
  /// of the 64 bytes they write: without a barrier on each side of a load, the stores that
  /// stage an edge could be dropped as dead or moved past it (the next edge staged into the
  /// same buffer, before it), and the configuration compared as its initialisers left it
  /// (the wanted one), never as sttilecfg wrote it.
  static void memory_barrier() { __asm__ __volatile__("" ::: "memory"); }
};

#undef TINYNET_TILE_DOTS_OF
#undef TINYNET_TILE_DOT
#undef TINYNET_TILE_ZERO
#undef TINYNET_TILE_STORE
#undef TINYNET_TILE_LOAD
#undef TINYNET_TILES_0_7

/// The same tiles in memory, one set per thread, with the instruction's arithmetic as the
/// SDM gives it: per element of C, the even and the odd products of the pairs summed apart
/// over k (each product exact in float32, each sum rounded to nearest even), then added
/// together, then to C; bfloat16 inputs and C's old value read with denormals as zero,
/// every sum's denormal result flushed to zero.
struct Emulated {
  static void configure() {}
  template <int T>
  static void zero() {
    std::memset(tile(T), 0, kRows * kRowBytes);
  }
  template <int T>
  static void load(const void* p, std::int64_t stride) {
    for (int r = 0; r < kRows; ++r)
      std::memcpy(tile(T) + r * kRowBytes, static_cast<const char*>(p) + r * stride, kRowBytes);
  }
  template <int T>
  static void store(void* p, std::int64_t stride) {
    for (int r = 0; r < kRows; ++r) std::memcpy(static_cast<char*>(p) + r * stride, tile(T) + r * kRowBytes, kRowBytes);
  }
  template <int C, int A, int B>
  static void dot() {
    static_assert(C >= 0 && C < 4 && (A == 4 || A == 5) && (B == 6 || B == 7),
                  "the tile products keep C in tiles 0-3, A in 4-5, B in 6-7");
    for (int m = 0; m < kRows; ++m)
      for (int n = 0; n < kRows; ++n) {
        float even = 0.0f, odd = 0.0f;
        for (int k = 0; k < kRows; ++k) {
          even = flush(even + value(A, m, 2 * k) * value(B, k, 2 * n));
          odd = flush(odd + value(A, m, 2 * k + 1) * value(B, k, 2 * n + 1));
        }
        const float c = flush(flush(get(C, m, n)) + flush(even + odd));
        std::memcpy(tile(C) + m * kRowBytes + 4 * n, &c, 4);
      }
  }

 private:
  static char* tile(int t) {
    alignas(64) static thread_local char tiles[8][kRows * kRowBytes];
    return tiles[t];
  }
  static float get(int t, int row, int col) {
    float v;
    std::memcpy(&v, tile(t) + row * kRowBytes + 4 * col, 4);
    return v;
  }
  /// bfloat16 number `i` of a row, widened; a denormal reads as zero.
  static float value(int t, int row, int i) {
    std::uint16_t h;
    std::memcpy(&h, tile(t) + row * kRowBytes + 2 * i, 2);
    const std::uint32_t bits = (h & 0x7F80u) == 0 ? (h & 0x8000u) << 16 : std::uint32_t{h} << 16;
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  }
  static float flush(float v) { return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.0f, v) : v; }
};

}  // namespace tile

#endif  // TINYNET_ISA_LEVEL >= TINYNET_ISA_AMX
