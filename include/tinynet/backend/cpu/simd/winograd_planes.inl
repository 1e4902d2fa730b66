/// \file
/// Where the Winograd transforms (winograd.inl) store the values of a vector of tiles: the
/// float32 planes the float32 products read, with bfloat16 products the same planes rounded
/// as they are stored, or on AVX512-BF16 the operand layouts of bf16_operands.inl.

namespace winograd {

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2

/// Where the input and output-gradient transforms put the values of a vector of tiles:
/// at(row, p0) is row `row` (a channel) from tile p0 on, and its store(xi, value, lanes)
/// writes plane xi's values for the lanes in use. Float32 planes: V's and E's layout
/// (winograd.inl's header comment).
struct F32Planes {
  float* data;
  std::int64_t plane, ld;
  struct At {
    float* p;
    std::int64_t plane;
    void store(int xi, Vec value, Mask lanes) const { value.store(p + xi * plane, lanes); }
  };
  At at(std::int64_t row, std::int64_t p0) const { return {data + row * ld + p0, plane}; }
};

/// Float32 planes whose values are rounded to bfloat16 as they are stored: where the
/// products take floats (below AVX512-BF16), autocast's operand as it is, with no pass
/// rounding the planes after the transform.
struct RoundedF32Planes {
  float* data;
  std::int64_t plane, ld;
  struct At {
    float* p;
    std::int64_t plane;
    void store(int xi, Vec value, Mask lanes) const { round_bf16(value).store(p + xi * plane, lanes); }
  };
  At at(std::int64_t row, std::int64_t p0) const { return {data + row * ld + p0, plane}; }
};

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512_BF16
/// The same values rounded to bfloat16 as they are stored, straight into the layouts of
/// simd/bf16_operands.inl's operands (what bf16::rows and bf16::pairs would make of the float32
/// planes, without writing and reading those): plane xi at data + xi * plane floats. At
/// the avx512_bf16 level.
///
/// Rows: row r's tiles at (bfloat16) r * ld, ld even; the products read past an odd tile
/// count up to ld, so pad_rows() zeroes that element.
struct Bf16Rows {
  float* data;
  std::int64_t plane, ld;
  std::uint16_t* row_of(int xi, std::int64_t row) const {
    return reinterpret_cast<std::uint16_t*>(data + xi * plane) + row * ld;
  }
  struct At {
    std::uint16_t* p;
    std::int64_t plane;  // in bfloat16
    void store(int xi, Vec value, Mask lanes) const {
      _mm256_mask_storeu_epi16(p + xi * plane, lanes, reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(value.v)));
    }
  };
  At at(std::int64_t row, std::int64_t p0) const { return {row_of(0, row) + p0, 2 * plane}; }
  void pad_rows(int points, std::int64_t rows, std::int64_t tiles) const {
    if (tiles % 2 == 0) return;
    for (int xi = 0; xi < points; ++xi)
      for (std::int64_t r = 0; r < rows; ++r) row_of(xi, r)[tiles] = 0;
  }
};

/// Pairs of rows (gemm_rows' right operand): rows 2i and 2i + 1 interleaved, tile p's pair
/// at (32-bit) i * ld + p. Each row writes its half of the pairs; with an odd row count
/// the last pairs' second half must be zero (pad_last_pair, before the transform).
struct Bf16Pairs {
  float* data;
  std::int64_t plane, ld;
  std::uint16_t* row_of(int xi, std::int64_t row) const {
    return reinterpret_cast<std::uint16_t*>(data + xi * plane) + (row / 2) * 2 * ld + (row % 2);
  }
  struct At {
    std::uint16_t* p;
    std::int64_t plane;  // in bfloat16
    void store(int xi, Vec value, Mask lanes) const {
      // Word t of the rounded values into words 2t and 2t + 1; the even ones are stored.
      alignas(64) static constexpr std::uint16_t spread[32] = {
          0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15};
      const __m512i words = _mm512_castsi256_si512(reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(value.v)));
      _mm512_mask_storeu_epi16(p + xi * plane, _pdep_u32(lanes, 0x55555555u),
                               _mm512_permutexvar_epi16(_mm512_load_si512(spread), words));
    }
  };
  At at(std::int64_t row, std::int64_t p0) const { return {row_of(0, row) + 2 * p0, 2 * plane}; }
  void pad_last_pair(int points, std::int64_t rows, std::int64_t tiles) const {
    if (rows % 2 == 0) return;
    for (int xi = 0; xi < points; ++xi) {
      std::uint16_t* second = row_of(xi, rows - 1) + 1;
      for (std::int64_t p = 0; p < tiles; ++p) second[2 * p] = 0;
    }
  }
};
#endif

#endif  // TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2

}  // namespace winograd
