/// \file
/// conv2d's forward pass and both gradients under autocast as direct 3x3 convolutions on
/// AMX tiles, at the amx level, for stride 1, padding up to 2 and channels in 16s (ResNet's
/// 3x3 layers; the input gradient is the output gradient's convolution with the filters
/// flipped and transposed, padding 2 - p; the weight gradient is described at weight_grad).
/// Per sample the input is laid out once as channel pairs by the pixels of the padded
/// image (bfloat16, a B tile's layout, bf16_operands.inl's pairs), so that each tap of the
/// window is an offset into it; the filters once per call as A tiles, 16 output channels by
/// the 32 values of one tap's 32 channels (where there are 16, two neighbouring taps' 16:
/// paired_taps).
/// Each block of 16 output channels by 16 consecutive pixels of the padded grid sums its
/// taps' products in one tile, and only the block's pixels inside the output are stored,
/// rounded to the output's type: blocks take two sets of tiles in turn, so that one
/// block's products run while the last one's tiles are stored and the one before is
/// written out (convolve). The products are those of the bfloat16-rounded operands
/// summed in float32, as every other route's; nothing else is written: on tiles, Winograd's
/// transforms took more of ResNet-20's step than all its products (docs/performance.md).

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AMX

namespace conv3x3 {

/// Whether g is a convolution this path runs.
inline bool fits(const Conv2dGeometry& g) {
  return g.plain() && g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 && g.ph <= 2 && g.pw <= 2 && g.c % 16 == 0 &&
         g.out_c % 16 == 0;
}

/// The padded image's pair planes: wp x hp pixels, each plane `plane` pixels long (the
/// rows below the image are read by the blocks past its last output row), `stored` planes
/// of which the c / 2 pairs' come first: the rest, up to a whole B tile's 16, stay zero.
/// Zeroed once; the image's pixels are all that each sample overwrites.
struct Planes {
  explicit Planes(const Conv2dGeometry& g)
      : wp(g.w + 2 * g.pw),
        hp(g.h + 2 * g.ph),
        plane((hp + 1) * wp + 4 * tile::kRows + 2),
        stored((g.c / 2 + tile::kRows - 1) / tile::kRows * tile::kRows) {}
  std::int64_t wp, hp, plane, stored;
  std::int64_t floats() const { return stored * plane; }  // one 32-bit pair per float
};

/// With 16 channels a tap's 8 pairs fill half of a tile's k: the planes after them (8-15)
/// then hold the same pairs one pixel on, so that one product sums two neighbouring taps
/// of a window's row: 6 products for the 9 taps instead of 9 half-empty ones. (The third
/// tap's product multiplies the pixel after the window by zero filters: a non-finite input
/// pixel makes a NaN of one more output than it would through another path.)
inline bool paired_taps(const Conv2dGeometry& g) { return g.c == 16; }

/// A block's products, one per group of taps: each tap alone (9), or with paired_taps per
/// row of the window the taps (0, 1) and then tap 2 alone (6). Group G's taps (the second
/// -1 where it has none), and its offset on the padded grid: its first tap's.
template <bool Paired>
inline constexpr int kTapGroups = Paired ? 6 : 9;
constexpr std::pair<int, int> group_taps(bool paired, int group) {
  if (!paired) return {group, -1};
  return group % 2 == 0 ? std::pair{group / 2 * 3, group / 2 * 3 + 1} : std::pair{group / 2 * 3 + 2, -1};
}
constexpr std::int64_t group_shift(bool paired, int group, std::int64_t wp) {
  const int tap = group_taps(paired, group).first;
  return tap / 3 * wp + tap % 3;
}

/// The A tiles' words for every 16 output channels, group of taps and chunk of 32 channels:
/// 16 rows of 32 bfloat16 (channel pairs in order, zeros past the channels; with
/// paired_taps the first tap's 16 channels, then the second's).
inline std::int64_t filter_words(const Conv2dGeometry& g) {
  return g.out_c / tile::kRows * 9 * ((g.c + 31) / 32) * tile::kRows * 32;
}
/// Those words, rounded, from weight(o, ci, t): the filter of output o, input ci, tap t.
template <typename Weight>
void prepare_filters(const Conv2dGeometry& g, Weight weight, std::uint16_t* a) {
  const std::int64_t chunks = (g.c + 31) / 32;
  const bool paired = paired_taps(g);
  std::memset(a, 0, static_cast<std::size_t>(filter_words(g)) * sizeof(std::uint16_t));
  for (std::int64_t o = 0; o < g.out_c; ++o)
    for (int group = 0; group < (paired ? kTapGroups<true> : kTapGroups<false>); ++group) {
      const auto [first, second] = group_taps(paired, group);
      for (std::int64_t ci = 0; ci < g.c; ++ci) {
        const std::int64_t block = ((o / tile::kRows * 9 + group) * chunks + ci / 32) * tile::kRows * 32;
        std::uint16_t* row = a + block + (o % tile::kRows) * 32;
        row[ci % 32] = bfloat16(weight(o, ci, first)).bits;
        if (second >= 0) row[16 + ci] = bfloat16(weight(o, ci, second)).bits;
      }
    }
}

/// Where a sample's input is: channel ci of sample n at x + n * sample + ci * channel, each
/// h x w (rows w apart).
template <typename X>
struct Input {
  const X* x;
  std::int64_t channel, sample;
};

/// Sample x (c channels of h x w, `channel` apart) as pair planes in `planes` (zero outside
/// the image from before).
template <typename X>
void lay_out(const Conv2dGeometry& g, const Planes& s, const X* x, std::int64_t channel, std::uint32_t* planes) {
  for (std::int64_t iy = 0; iy < g.h; ++iy)
    bf16::detail::pairs(g.c, g.w, x + iy * g.w, channel, planes + (iy + g.ph) * s.wp + g.pw, s.plane);
  if (!paired_taps(g)) return;
  // Planes 8-15: pixel p of each is pixel p + 1 of planes 0-7 (the image and the zeros
  // between its rows in one run; the rest zero from before, as the pixels it takes).
  const std::int64_t start = g.ph * s.wp + g.pw, end = (g.h - 1 + g.ph) * s.wp + g.pw + g.w;
  const std::int64_t from = std::max<std::int64_t>(start, 1);
  for (std::int64_t p = 0; p < g.c / 2; ++p)
    std::memcpy(planes + (g.c / 2 + p) * s.plane + from - 1, planes + p * s.plane + from,
                static_cast<std::size_t>(end - from) * sizeof(std::uint32_t));
}

/// The output pixels among 16 consecutive ones of the padded grid from q: runs of lanes
/// [lo, hi) of the block going to output row `oy` from column `ox`, one per grid row the
/// block touches: at most 15 / wp + 2, 7 for the narrowest grid with an output (wp = 3).
struct Runs {
  struct Run {
    std::int64_t lo, hi, oy, ox;
  };
  Run run[(tile::kRows - 1) / 3 + 2];
  int count = 0;
  Runs(const Conv2dGeometry& g, std::int64_t wp, std::int64_t q) {
    for (std::int64_t l = 0; l < tile::kRows;) {
      const std::int64_t oy = (q + l) / wp, ox = (q + l) % wp, len = std::min(tile::kRows - l, wp - ox);
      if (oy < g.oh && ox < g.ow) run[count++] = {l, l + std::min(len, g.ow - ox), oy, ox};
      l += len;
    }
  }
};

/// A block: output channels [o, o + 16 R) by the 16 Q pixels of the padded grid from q, of
/// one sample (R x Q <= 2 tiles of sums: blocks in turn take tiles 0-1 and 2-3).
template <int R, int Q>
struct Block {
  static_assert(R * Q <= 2, "sums in tiles 0-1 or 2-3");
  std::int64_t o, q;
};

/// The block's sums into tile set Set (tiles 2 Set to 2 Set + R Q - 1), the taps grouped as
/// paired_taps says (Paired). A's tiles alternate between 4 and 5 group by group where R is
/// 1, B's between 6 and 7 where Q is 1, so that a load need not wait for the product before it.
template <class Tiles, bool Paired, int Set, int R, int Q>
void multiply(const Conv2dGeometry& g, const Planes& s, const std::uint16_t* a, const std::uint32_t* planes,
              Block<R, Q> blk) {
  const std::int64_t chunks = (g.c + 31) / 32;
  tile::detail::unroll<R * Q>([&]<int C>() { Tiles::template zero<2 * Set + C>(); });
  tile::detail::unroll<kTapGroups<Paired>>([&]<int T>() {
    const std::int64_t shift = group_shift(Paired, T, s.wp);
    for (std::int64_t j = 0; j < chunks; ++j) {
      const std::uint16_t* filters = a + (((blk.o / tile::kRows) * 9 + T) * chunks + j) * tile::kRows * 32;
      const std::uint32_t* b = planes + j * tile::kRows * s.plane + blk.q + shift;
      tile::detail::unroll<R>([&]<int I>() {
        constexpr int A = R == 1 ? 4 + T % 2 : 4 + I;
        Tiles::template load<A>(filters + I * 9 * chunks * tile::kRows * 32, tile::kRowBytes);
      });
      tile::detail::unroll<Q>([&]<int J>() {
        constexpr int B = Q == 1 ? 6 + T % 2 : 6 + J;
        Tiles::template load<B>(b + J * tile::kRows, 4 * s.plane);
        tile::detail::unroll<R>([&]<int I>() {
          constexpr int A = R == 1 ? 4 + T % 2 : 4 + I;
          Tiles::template dot<2 * Set + Q * I + J, A, B>();
        });
      });
    }
  });
}

/// A block's sums as stored from its tile set: tile Q I + J's 16 rows (output channels) of 16
/// pixels.
template <int R, int Q>
struct Sums {
  Block<R, Q> blk;
  alignas(64) float v[R * Q][tile::kRows * tile::kRows];
  template <class Tiles, int Set>
  void store(Block<R, Q> b) {
    blk = b;
    tile::detail::unroll<R * Q>([&]<int C>() { Tiles::template store<2 * Set + C>(v[C], tile::kRowBytes); });
  }
};

/// The sums' pixels inside the output to y (+ bias, then ReLU), each run of a row's lanes
/// stored where it goes by a masked store from the lanes' own position (no lanes moved).
template <int R, int Q, typename Y>
void write(const Conv2dGeometry& g, std::int64_t wp, const Sums<R, Q>& sums, const float* bias, bool relu,
           bool accumulate, Y* y) {
  tile::detail::unroll<Q>([&]<int J>() {
    const Runs runs(g, wp, sums.blk.q + J * tile::kRows);
    if (runs.count == 0) return;
    for (int i = 0; i < R; ++i)
      for (std::int64_t r = 0; r < tile::kRows; ++r) {
        const std::int64_t oc = sums.blk.o + tile::kRows * i + r;
        Vec v = Vec::load(sums.v[Q * i + J] + tile::kRows * r);
        if (bias != nullptr) v = v + Vec::set1(bias[oc]);
        if (relu) v = TINYNET_ISA_NAMESPACE::relu(v);
        for (int k = 0; k < runs.count; ++k) {
          const auto& run = runs.run[k];
          const Mask lanes = TINYNET_ISA_NAMESPACE::detail::lanes_between(run.lo, run.hi);
          // Lane l of the run goes to column ox + l - lo of output row oy; the address is
          // that of lane 0, which only the masked lanes are stored from.
          Y* const at = y + (oc * g.oh + run.oy) * g.ow + run.ox - run.lo;
          Vec out = v;
          if (accumulate) out = load_elems(at, lanes) + out;
          store_elems(at, lanes, out);
        }
      }
  });
}

/// y (+)= conv2d(in, filters) + b (then ReLU) for g (fits(g)), the products on tiles T, the
/// filters prepared by prepare_filters. y: samples of out_c x oh x ow, float32 or bfloat16;
/// with `accumulate` the result is added to y's values, the sum rounded once.
template <class Tiles, typename X, typename Y>
void convolve(const Conv2dGeometry& g, Input<X> in, const std::uint16_t* filters, const float* b, bool relu,
              bool accumulate, Y* y) {
  const Planes s(g);
  const std::int64_t pixels = g.oh * s.wp;  // the output rows on the padded grid
  parallel_for(g.n, 1, [&](std::int64_t lo, std::int64_t hi) {
    Tiles::configure();
    ScratchFloats buffer(s.floats());
    auto* planes = reinterpret_cast<std::uint32_t*>(buffer.data());
    std::memset(planes, 0, static_cast<std::size_t>(s.floats()) * sizeof(std::uint32_t));
    Sums<2, 1> sums21[2];
    Sums<1, 2> sums12[2];
    for (std::int64_t n = lo; n < hi; ++n) {
      lay_out(g, s, in.x + n * in.sample, in.channel, planes);
      Y* yn = y + n * g.out_c * g.oh * g.ow;
      // Block k's products run in tile set k % 2 while block k - 1's sums are stored from
      // the other set, and block k - 2's are written out from memory (AVX-512): the tiles
      // never wait for the stores, nor the stores for the products of the next block.
      const auto row = [&]<bool Paired, int R, int Q>(std::int64_t o, Sums<R, Q>(&sums)[2]) {
        constexpr std::int64_t step = Q * tile::kRows;
        const auto next = [&]<int Set>(std::int64_t q) {  // block k at q, in set Set
          if (q < pixels) multiply<Tiles, Paired, Set>(g, s, filters, planes, Block<R, Q>{o, q});
          if (q >= step && q - step < pixels) sums[1 - Set].template store<Tiles, 1 - Set>(Block<R, Q>{o, q - step});
          if (q >= 2 * step && q - 2 * step < pixels) write(g, s.wp, sums[Set], b, relu, accumulate, yn);
        };
        for (std::int64_t q = 0; q < pixels + 2 * step; q += 2 * step) {
          next.template operator()<0>(q);
          next.template operator()<1>(q + step);
        }
      };
      const auto blocks = [&]<bool Paired>() {
        for (std::int64_t o = 0; o < g.out_c; o += 2 * tile::kRows) {
          if (o + tile::kRows < g.out_c)
            row.template operator()<Paired>(o, sums21);
          else
            row.template operator()<Paired>(o, sums12);
        }
      };
      if (paired_taps(g))
        blocks.template operator()<true>();
      else
        blocks.template operator()<false>();
    }
  });
}

/// y = conv2d(x, w) + b (then ReLU) for g (fits(g)): x's samples c x h x w, w's out_c x c x 3 x 3.
template <class Tiles, typename X, typename Y>
void forward(const Conv2dGeometry& g, const X* x, const float* w, const float* b, Y* y, bool relu) {
  Scratch<std::uint16_t> filters(filter_words(g));
  prepare_filters(
      g, [&](std::int64_t o, std::int64_t ci, std::int64_t t) { return w[(o * g.c + ci) * 9 + t]; }, filters.data());
  convolve<Tiles>(g, Input<X>{x, g.h * g.w, g.c * g.h * g.w}, filters.data(), b, relu, false, y);
}

/// The convolution that carries g's output gradient back to its input: of out_c channels of
/// oh x ow, into c channels of h x w, padding 2 - p (fits(g) makes it fit too).
inline Conv2dGeometry input_grad_geometry(const Conv2dGeometry& g) {
  return {g.n, g.out_c, g.oh, g.ow, g.c, 3, 3, 1, 1, 2 - g.ph, 2 - g.pw, g.h, g.w};
}

/// input_grad_geometry's filters from g's w: flipped and transposed, prepared.
inline void prepare_input_grad_filters(const Conv2dGeometry& g, const float* w, std::uint16_t* a) {
  prepare_filters(
      input_grad_geometry(g),
      [&](std::int64_t ci, std::int64_t o, std::int64_t t) { return w[(o * g.c + ci) * 9 + (8 - t)]; }, a);
}

/// dx (+)= the input gradient of g for `count` samples of the output gradient gy (channel o
/// of sample j at gy.x + j * gy.sample + o * gy.channel), the filters from
/// prepare_input_grad_filters; dx's samples c x h x w.
template <class Tiles, typename X, typename Y>
void input_grad(const Conv2dGeometry& g, std::int64_t count, Input<Y> gy, const std::uint16_t* filters, bool accumulate,
                X* dx) {
  Conv2dGeometry back = input_grad_geometry(g);
  back.n = count;
  convolve<Tiles>(back, gy, filters, nullptr, false, accumulate, dx);
}

/// dw[o][ci][t] += the weight gradient of g over `count` samples: per tap t, the sum over
/// the output's pixels of gy (o) times the input shifted by t (ci). On tiles as the product
/// of the input's padded rows (an A tile: 16 channels by 32 pixels, the shift an offset)
/// and the output gradient transposed into pixel pairs by channels (a B tile), over every
/// pixel of the padded grid (the output gradient zero outside the output), summed in 16
/// channels x 16 outputs per tap across the samples, then added to dw (out_c x c x 9).
template <class Tiles, typename X>
void weight_grad(const Conv2dGeometry& g, std::int64_t count, Input<X> in, Input<bfloat16> gy, float* dw) {
  const Planes s(g);
  constexpr std::int64_t kPixels = 2 * tile::kRows;  // along k per tile: 16 pixel pairs
  const std::int64_t span = (g.oh * s.wp + kPixels - 1) / kPixels * kPixels;
  Scratch<std::uint16_t> rows(count * g.c * s.plane), gy_rows(g.out_c * span);
  Scratch<std::uint32_t> gy_pairs(count * span / 2 * g.out_c);
  // Up to 32 words in one masked move, bfloat16 as it is or float32 rounded.
  const auto words = [&](std::uint16_t* dst, const auto* src, std::int64_t n) {
    for (std::int64_t j = 0; j < n; j += kPixels) {
      const std::int64_t left = std::min(kPixels, n - j);
      const auto m = static_cast<__mmask32>(left >= 32 ? ~0u : (1u << left) - 1u);
      if constexpr (std::is_same_v<std::remove_cvref_t<decltype(*src)>, bfloat16>)
        _mm512_mask_storeu_epi16(dst + j, m, _mm512_maskz_loadu_epi16(m, src + j));
      else
        _mm512_mask_storeu_epi16(dst + j, m, bf16::detail::convert32(src + j, left));
    }
  };
  // The samples' input as padded bfloat16 rows (each plane's padding zeroed as its rows are
  // written), and their output gradient as pixel pairs (zero outside the output).
  std::memset(gy_rows.data(), 0, static_cast<std::size_t>(g.out_c * span) * sizeof(std::uint16_t));
  for (std::int64_t n = 0; n < count; ++n) {
    for (std::int64_t ci = 0; ci < g.c; ++ci) {
      std::uint16_t* plane = rows.data() + (n * g.c + ci) * s.plane;
      const std::int64_t first = g.ph * s.wp + g.pw, last = (g.h - 1 + g.ph) * s.wp + g.pw + g.w;
      std::fill(plane, plane + first, std::uint16_t{0});
      std::fill(plane + last, plane + s.plane, std::uint16_t{0});
      for (std::int64_t iy = 0; iy < g.h; ++iy) {
        std::uint16_t* dst = plane + first + iy * s.wp;
        if (iy + 1 < g.h) std::fill(dst + g.w, dst + s.wp, std::uint16_t{0});  // this row's and the next's padding
        words(dst, in.x + n * in.sample + ci * in.channel + iy * g.w, g.w);
      }
    }
    for (std::int64_t o = 0; o < g.out_c; ++o)
      for (std::int64_t oy = 0; oy < g.oh; ++oy)
        words(gy_rows.data() + o * span + oy * s.wp, gy.x + n * gy.sample + o * gy.channel + oy * g.ow, g.ow);
    bf16::detail::transpose_words(g.out_c, span / 2, reinterpret_cast<const std::uint32_t*>(gy_rows.data()), span / 2,
                                  gy_pairs.data() + n * span / 2 * g.out_c, g.out_c);
  }
  Tiles::configure();
  alignas(64) float out[tile::kRows * tile::kRows];
  // A row of taps (dx = 0, 1, 2) at a time in tiles 0-2: three independent sums, so that the
  // products do not wait on each other, over one load of the output gradient's tile.
  for (std::int64_t ci = 0; ci < g.c; ci += tile::kRows)
    for (std::int64_t o = 0; o < g.out_c; o += tile::kRows)
      for (std::int64_t dy = 0; dy < 3; ++dy) {
        tile::detail::unroll<3>([&]<int D>() { Tiles::template zero<D>(); });
        for (std::int64_t n = 0; n < count; ++n) {
          const std::uint16_t* a = rows.data() + (n * g.c + ci) * s.plane + dy * s.wp;
          for (std::int64_t q = 0; q < span; q += kPixels) {
            Tiles::template load<6>(gy_pairs.data() + (n * span + q) / 2 * g.out_c + o, 4 * g.out_c);
            tile::detail::unroll<3>([&]<int D>() {
              Tiles::template load<4 + D % 2>(a + q + D, 2 * s.plane);
              Tiles::template dot<D, 4 + D % 2, 6>();
            });
          }
        }
        tile::detail::unroll<3>([&]<int D>() {
          Tiles::template store<D>(out, tile::kRowBytes);
          for (std::int64_t i = 0; i < tile::kRows; ++i)
            for (std::int64_t j = 0; j < tile::kRows; ++j)
              dw[((o + j) * g.c + ci + i) * 9 + dy * 3 + D] += out[i * tile::kRows + j];
        });
      }
}

}  // namespace conv3x3

#endif  // TINYNET_ISA_LEVEL >= TINYNET_ISA_AMX
