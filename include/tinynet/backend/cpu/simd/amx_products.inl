/// \file
/// autocast's bfloat16 products on AMX tiles (simd/amx_tiles.inl), at the amx level: the
/// operands bf16_products.inl multiplies on vdpbf16ps, in the same layouts, so that they
/// load into tiles as they are. gemm_rows' left operand (rows of pairs along k) is an A
/// tile's layout, its right operand (pairs along k by columns) a B tile's; gemm_nt's right
/// operand (rows along k) is transposed into pairs by columns in cache, 32 rows at a time.
/// C is computed in blocks of 2 x 2 tiles (32 x 32 floats) held in tiles 0-3 over all of k;
/// A's two tiles are 4 and 5, B's 6 and 7. Where an operand's tile would reach past its
/// rows, its columns or k, that tile is staged with zeros first (tiles cannot be masked).
/// Each product is a template of the tiles (`Hardware`, `Emulated`).

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AMX

namespace tile {

/// Whether a product of m rows, n columns and k2 pairs along k runs on tiles: where it
/// fills at least one whole tile of rows and of columns, and half of one along k (16
/// channels, as ResNet's first stage has). Below that, staging the edges costs more than
/// the tiles save over vdpbf16ps, which masks its edges.
inline bool pays(std::int64_t m, std::int64_t n, std::int64_t k2) {
  return m >= kRows && n >= kRows && k2 >= kRows / 2;
}

namespace detail {

/// f.template operator()<I>() for I = 0 .. N - 1: a tile's register number must be a constant.
template <int N, typename F>
inline void unroll(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) { (f.template operator()<I>(), ...); }
  (std::make_integer_sequence<int, N>{});
}

/// Loads tile T from 16 rows of 64 bytes at p, `stride` bytes apart; where only `rows`
/// rows of `bytes` bytes are the operand's, from a copy of those with zeros after them,
/// made in `staged` (kRows x kRowBytes) a row per masked load (a byte-wise memcpy and
/// memset per row cost several times the products of a block with a k tail).
template <class Tiles, int T>
inline void load(const void* p, std::int64_t stride, std::int64_t rows, std::int64_t bytes, char* staged) {
  if (rows == kRows && bytes == kRowBytes) return Tiles::template load<T>(p, stride);
  const __mmask64 in_row = bytes >= kRowBytes ? ~__mmask64{0} : (__mmask64{1} << bytes) - 1;
  for (std::int64_t r = 0; r < kRows; ++r)
    _mm512_store_si512(
        staged + r * kRowBytes,
        r < rows ? _mm512_maskz_loadu_epi8(in_row, static_cast<const char*>(p) + r * stride) : _mm512_setzero_si512());
  Tiles::template load<T>(staged, kRowBytes);
}

/// One block of C, R x Q tiles (R, Q of 1 or 2), `rows` x `cols` of it in bounds: C = A B
/// (+ bias[row], then ReLU), or C += A B with `add` (no bias or ReLU then). A: rows of k2
/// pairs, lda bfloat16 apart; B: k2 rows of pairs by columns, ldb pairs apart.
template <class Tiles, int R, int Q>
inline void block(std::int64_t rows, std::int64_t cols, std::int64_t k2, const std::uint16_t* a, std::int64_t lda,
                  const std::uint32_t* b, std::int64_t ldb, float* c, std::int64_t ldc, const float* bias, bool relu,
                  bool add) {
  alignas(64) char staged[4][kRows * kRowBytes];  // A's tiles, then B's
  alignas(64) float out[kRows * kRows];
  const auto rows_of = [&](int i) { return std::min<std::int64_t>(kRows, rows - kRows * i); };
  const auto cols_of = [&](int q) { return std::min<std::int64_t>(kRows, cols - kRows * q); };
  unroll<R>([&]<int I>() {
    unroll<Q>([&]<int J>() {
      if (add)
        load<Tiles, Q * I + J>(c + kRows * (I * ldc + J), 4 * ldc, rows_of(I), 4 * cols_of(J),
                               reinterpret_cast<char*>(out));
      else
        Tiles::template zero<Q * I + J>();
    });
  });
  for (std::int64_t j = 0; j < k2; j += kRows) {
    const std::int64_t steps = std::min<std::int64_t>(kRows, k2 - j);
    unroll<R>(
        [&]<int I>() { load<Tiles, 4 + I>(a + kRows * I * lda + 2 * j, 2 * lda, rows_of(I), 4 * steps, staged[I]); });
    unroll<Q>(
        [&]<int J>() { load<Tiles, 6 + J>(b + j * ldb + kRows * J, 4 * ldb, steps, 4 * cols_of(J), staged[2 + J]); });
    unroll<R>([&]<int I>() { unroll<Q>([&]<int J>() { Tiles::template dot<Q * I + J, 4 + I, 6 + J>(); }); });
  }
  unroll<R>([&]<int I>() {
    unroll<Q>([&]<int J>() {
      float* to = c + kRows * (I * ldc + J);
      const std::int64_t nr = rows_of(I), nc = cols_of(J);
      if (nr == kRows && nc == kRows && bias == nullptr && !relu) return Tiles::template store<Q * I + J>(to, 4 * ldc);
      Tiles::template store<Q * I + J>(out, kRowBytes);
      const Mask m = TINYNET_ISA_NAMESPACE::detail::lanes_between(0, nc);
      for (std::int64_t r = 0; r < nr; ++r) {
        Vec v = Vec::load(out + kRows * r);
        if (bias != nullptr) v = v + Vec::set1(bias[kRows * I + r]);
        (relu ? TINYNET_ISA_NAMESPACE::relu(v) : v).store(to + r * ldc, m);
      }
    });
  });
}

/// block() with R and Q from the block's extent (up to 32 x 32).
template <class Tiles>
inline void block_of(std::int64_t rows, std::int64_t cols, std::int64_t k2, const std::uint16_t* a, std::int64_t lda,
                     const std::uint32_t* b, std::int64_t ldb, float* c, std::int64_t ldc, const float* bias, bool relu,
                     bool add) {
  if (rows > kRows && cols > kRows) return block<Tiles, 2, 2>(rows, cols, k2, a, lda, b, ldb, c, ldc, bias, relu, add);
  if (rows > kRows) return block<Tiles, 2, 1>(rows, cols, k2, a, lda, b, ldb, c, ldc, bias, relu, add);
  if (cols > kRows) return block<Tiles, 1, 2>(rows, cols, k2, a, lda, b, ldb, c, ldc, bias, relu, add);
  block<Tiles, 1, 1>(rows, cols, k2, a, lda, b, ldb, c, ldc, bias, relu, add);
}

}  // namespace detail

/// Rows [r0, r1) of C = A B (+ bias, ReLU; C += A B with `add`): bf16::detail::gemm_rows_range's
/// operands (A rows of k2 pairs, lda pairs apart; B k2 rows of n pairs, ldb apart) and
/// meaning. Blocks of 32 x 32, B's 32 columns outermost, so that they stay in cache while
/// every block of A's rows meets them.
template <class Tiles>
void gemm_rows_range(std::int64_t r0, std::int64_t r1, std::int64_t n, std::int64_t k2, const std::uint32_t* a,
                     std::int64_t lda, const std::uint32_t* b, std::int64_t ldb, float* c, std::int64_t ldc,
                     const float* bias, bool relu, bool add) {
  Tiles::configure();
  constexpr std::int64_t kBlock = 2 * kRows;
  for (std::int64_t p0 = 0; p0 < n; p0 += kBlock)
    for (std::int64_t r = r0; r < r1; r += kBlock)
      detail::block_of<Tiles>(std::min(kBlock, r1 - r), std::min(kBlock, n - p0), k2,
                              reinterpret_cast<const std::uint16_t*>(a + r * lda), 2 * lda, b + p0, ldb,
                              c + r * ldc + p0, ldc, bias != nullptr ? bias + r : nullptr, relu, add);
}

/// C[m, n] += A[m, k] B[n, k]^T: bf16::detail::gemm_nt's operands (rows of bfloat16, k and
/// both leading dimensions even) and meaning. 32 of B's rows by 512 values of k at a time
/// are transposed into pairs by columns in `panel` (in cache), then every 32 rows of A
/// multiply them into C.
template <class Tiles>
void gemm_nt(std::int64_t m, std::int64_t n, std::int64_t k, const std::uint16_t* a, std::int64_t lda,
             const std::uint16_t* b, std::int64_t ldb, float* c, std::int64_t ldc) {
  Tiles::configure();
  constexpr std::int64_t kBlock = 2 * kRows, kChunk = 512;
  ScratchFloats scratch(kChunk / 2 * kBlock);
  auto* panel = reinterpret_cast<std::uint32_t*>(scratch.data());
  for (std::int64_t r0 = 0; r0 < n; r0 += kBlock) {
    const std::int64_t cols = std::min(kBlock, n - r0);
    for (std::int64_t p0 = 0; p0 < k; p0 += kChunk) {
      const std::int64_t k2 = std::min(kChunk, k - p0) / 2;
      bf16::detail::transpose_words(cols, k2, reinterpret_cast<const std::uint32_t*>(b + r0 * ldb + p0), ldb / 2, panel,
                                    kBlock);
      for (std::int64_t o = 0; o < m; o += kBlock)
        detail::block_of<Tiles>(std::min(kBlock, m - o), cols, k2, a + o * lda + p0, lda, panel, kBlock,
                                c + o * ldc + r0, ldc, nullptr, false, true);
    }
  }
}

}  // namespace tile

#endif  // TINYNET_ISA_LEVEL >= TINYNET_ISA_AMX
