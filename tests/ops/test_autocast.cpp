// autocast (amp/autocast.hpp): which ops run their products in bfloat16, against float64
// references with bounds derived from the rounding, never tuned to pass. Products of two
// bfloat16 values are exact in float32, so an op whose operands are rounded to bfloat16 and
// whose sums are float32 is within gamma_K * sum |a b| of the float64 sum of the rounded
// operands (K terms; gamma_K = K u / (1 - K u), u = 2^-24: Higham, Accuracy and Stability of
// Numerical Algorithms, 3.1), whatever the summation order, threads and vector level.
// Winograd's products round the transformed tiles and filters instead; its bound is below,
// and holds, without the rounding to bfloat16, for Winograd in float32 too (checked here).
#include <optional>
#include <tinynet/backend/cpu/conv2d.hpp>
#include <tinynet/backend/cpu/detail/winograd.hpp>

#include "fill_uninitialized.hpp"
#include "op_testing.hpp"
#include "thread_count_restorer.hpp"

using namespace tinynet;
using tinynet::testing::FillUninitialized;
using tinynet::testing::ThreadCountRestorer;

// Named, not anonymous: the area's test files are compiled as one translation unit.
namespace autocast_testing {

constexpr double kBf16Unit = 0x1p-8;  // bfloat16 keeps 8 significant bits
constexpr double kF32Unit = 0x1p-24;

double gamma32(std::int64_t k) { return static_cast<double>(k) * kF32Unit / (1 - static_cast<double>(k) * kF32Unit); }

Tensor uniform32(const Shape& shape, std::uint64_t seed, bool requires_grad = true) {
  Generator gen(seed);
  return uniform(shape, -1.0, 1.0, {.dtype = DType::float32, .requires_grad = requires_grad}, gen);
}

/// A float32 (or bfloat16) tensor's values as doubles, rounded to bfloat16 first with `round`.
std::vector<double> values(const Tensor& t, bool round) {
  const Tensor f = t.to(DType::float32);
  std::vector<double> v(static_cast<std::size_t>(f.numel()));
  const float* p = f.data<float>();
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = round ? detail::round_to_bf16(p[i]) : p[i];
  return v;
}

/// Every element of got within bound[i] of want[i]; for a bfloat16 `got` (autocast's
/// outputs), within bound[i] plus its own rounding: u_bf times the computed value, itself
/// at most |want[i]| + bound[i].
void check_within(const Tensor& got, const std::vector<double>& want, const std::vector<double>& bound) {
  REQUIRE(got.numel() == static_cast<std::int64_t>(want.size()));
  const std::vector<double> g = values(got, false);
  const bool rounded = got.dtype() == DType::bfloat16;
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double b = rounded ? bound[i] + kBf16Unit * (std::fabs(want[i]) + bound[i]) : bound[i];
    INFO("element " << i << ": got " << g[i] << ", want " << want[i] << ", bound " << b);
    REQUIRE(std::fabs(g[i] - want[i]) <= b);
    worst = std::max(worst, std::fabs(g[i] - want[i]) / std::max(b, 1e-300));
  }
  // Not a test: how much of the bound the kernels use (bfloat16 products are not float32's).
  UNSCOPED_INFO("worst error: " << worst << " of the bound");
}

/// Direct 2-d cross-correlation in float64, with the sum of the magnitudes of its terms.
struct Conv {
  std::int64_t n, c, h, w, o, k, stride, pad, oh, ow;
  Conv(std::int64_t n_, std::int64_t c_, std::int64_t h_, std::int64_t w_, std::int64_t o_, std::int64_t k_,
       std::int64_t stride_, std::int64_t pad_)
      : n(n_),
        c(c_),
        h(h_),
        w(w_),
        o(o_),
        k(k_),
        stride(stride_),
        pad(pad_),
        oh((h_ + 2 * pad_ - k_) / stride_ + 1),
        ow((w_ + 2 * pad_ - k_) / stride_ + 1) {}
  backend::Conv2dGeometry geometry() const { return {n, c, h, w, o, k, k, stride, stride, pad, pad, oh, ow}; }
  /// Calls f(out index, input index, weight index) for every term of the convolution.
  template <typename F>
  void terms(F&& f) const {
    for (std::int64_t b = 0; b < n; ++b)
      for (std::int64_t q = 0; q < o; ++q)
        for (std::int64_t y = 0; y < oh; ++y)
          for (std::int64_t x = 0; x < ow; ++x)
            for (std::int64_t ci = 0; ci < c; ++ci)
              for (std::int64_t i = 0; i < k; ++i)
                for (std::int64_t j = 0; j < k; ++j) {
                  const std::int64_t iy = y * stride - pad + i, ix = x * stride - pad + j;
                  if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                  f(((b * o + q) * oh + y) * ow + x, ((b * c + ci) * h + iy) * w + ix, ((q * c + ci) * k + i) * k + j);
                }
  }
};

/// want, bound for a product whose terms are a[ia] * b[ib] summed into out[io] (each
/// output K terms at most), the operands rounded to bfloat16.
struct Sums {
  std::vector<double> want, mag;
  explicit Sums(std::size_t n) : want(n), mag(n) {}
  void add(std::int64_t at, double term) {
    want[static_cast<std::size_t>(at)] += term;
    mag[static_cast<std::size_t>(at)] += std::fabs(term);
  }
  std::vector<double> bound(std::int64_t k) const {
    std::vector<double> b(mag.size());
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = gamma32(k) * mag[i];
    return b;
  }
};

/// The float64 sums, with their magnitudes, of a convolution's output, input gradient and
/// weight gradient, from input xv, filters wv and output gradient gv.
struct ConvSums {
  Sums y, dx, dw;
};
ConvSums conv_sums(const Conv& cv, const std::vector<double>& xv, const std::vector<double>& wv,
                   const std::vector<double>& gv) {
  ConvSums s{Sums(static_cast<std::size_t>(cv.n * cv.o * cv.oh * cv.ow)),
             Sums(static_cast<std::size_t>(cv.n * cv.c * cv.h * cv.w)),
             Sums(static_cast<std::size_t>(cv.o * cv.c * cv.k * cv.k))};
  cv.terms([&](std::int64_t io, std::int64_t ix, std::int64_t iw) {
    s.y.add(io, xv[ix] * wv[iw]);
    s.dx.add(ix, gv[io] * wv[iw]);
    s.dw.add(iw, gv[io] * xv[ix]);
  });
  return s;
}

/// conv2d (conv2d_relu with `relu`) under autocast against references on the
/// bfloat16-rounded operands: y (with bias), dx, dw (K: c k k, o k k, n oh ow terms), and db
/// from float32 sums of gy; without `input_grad` the input needs no gradient (a first
/// layer's weight gradient alone). Every path whose products are the rounded operands' (not
/// Winograd's) is within these bounds.
void check_conv_products(const Conv& cv, std::uint64_t seed, bool relu = false, bool input_grad = true) {
  INFO("conv2d of " << cv.n << " x " << cv.c << " x " << cv.h << " x " << cv.w << " by " << cv.o << " filters " << cv.k
                    << " x " << cv.k << ", stride " << cv.stride << ", padding " << cv.pad << (relu ? ", ReLU" : "")
                    << (input_grad ? "" : ", no input gradient"));
  Tensor x = uniform32({cv.n, cv.c, cv.h, cv.w}, seed, input_grad), wt = uniform32({cv.o, cv.c, cv.k, cv.k}, seed + 1),
         b = uniform32({cv.o}, seed + 2);
  Tensor y;
  {
    autocast scope;
    y = relu ? conv2d_relu(x, wt, b, static_cast<int>(cv.stride), static_cast<int>(cv.pad))
             : conv2d(x, wt, b, static_cast<int>(cv.stride), static_cast<int>(cv.pad));
  }
  REQUIRE(y.dtype() == DType::bfloat16);  // as PyTorch's autocast returns it
  const Tensor gy = uniform32(y.shape(), seed + 3, false).to(DType::bfloat16);
  y.backward(gy);  // outside the scope: recorded as bfloat16 products
  // The fused ReLU passes the output gradient where its (computed) output is positive.
  auto gexact = values(gy, false);
  if (relu) {
    const auto yv = values(y, false);
    for (std::size_t i = 0; i < gexact.size(); ++i) gexact[i] = yv[i] > 0 ? gexact[i] : 0.0;
  }
  auto [fy, fdx, fdw] = conv_sums(cv, values(x, true), values(wt, true), gexact);
  for (std::int64_t i = 0; i < y.numel(); ++i) fy.add(i, b.data<float>()[i / (cv.oh * cv.ow) % cv.o]);
  if (relu)  // max(., 0) moves no value further from the other: the bound holds after it
    for (double& v : fy.want) v = std::max(v, 0.0);
  {
    INFO("y");
    check_within(y, fy.want, fy.bound(cv.c * cv.k * cv.k + 1));
  }
  if (input_grad) {
    INFO("dx");
    check_within(x.grad(), fdx.want, fdx.bound(cv.o * cv.k * cv.k));
  } else {
    REQUIRE_FALSE(x.grad().defined());
  }
  {
    INFO("dw");
    check_within(wt.grad(), fdw.want, fdw.bound(cv.n * cv.oh * cv.ow));
  }
  Sums fdb(static_cast<std::size_t>(cv.o));
  for (std::int64_t i = 0; i < gy.numel(); ++i)
    fdb.add(i / (cv.oh * cv.ow) % cv.o, gexact[static_cast<std::size_t>(i)]);
  check_within(b.grad(), fdb.want, fdb.bound(cv.n * cv.oh * cv.ow));
}

/// check_conv_products on a shape that takes im2col (or the direct one-channel kernel) at
/// every level.
void check_conv_im2col(const Conv& cv, std::uint64_t seed, bool relu = false, bool input_grad = true) {
  REQUIRE_FALSE(backend::cpu::uses_winograd<float>(cv.geometry()));
  check_conv_products(cv, seed, relu, input_grad);
}

/// vd[ci * 16 + xi] = (|B^T||d||B|)[xi] for image b's tile (ty, tx) of every input channel
/// ci (`in`: [n, c, h, w], zero padding `pad`).
void input_tile_magnitudes(const std::vector<double>& in, std::int64_t b, std::int64_t c, std::int64_t h,
                           std::int64_t w, std::int64_t pad, std::int64_t ty, std::int64_t tx,
                           std::vector<double>& vd) {
  using Mx = backend::cpu::winograd::Matrices<3>;
  for (std::int64_t ci = 0; ci < c; ++ci)
    for (int a = 0; a < 4; ++a)
      for (int bb = 0; bb < 4; ++bb) {
        double s = 0;
        for (int r = 0; r < 4; ++r)
          for (int t = 0; t < 4; ++t) {
            const std::int64_t iy = 2 * ty - pad + r, ix = 2 * tx - pad + t;
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
            s += std::fabs(Mx::BT[a][r]) * std::fabs(in[static_cast<std::size_t>(((b * c + ci) * h + iy) * w + ix)]) *
                 std::fabs(Mx::BT[bb][t]);
          }
        vd[static_cast<std::size_t>(ci * 16 + a * 4 + bb)] = s;
      }
}

/// How Winograd's products are computed: in bfloat16 (the transformed tiles and filters
/// rounded to bfloat16, relative error <= u_bf = 2^-8; their products exact in float32)
/// or in float32 (nothing rounded but each product, one more float32 rounding).
struct WinogradProducts {
  double operand_unit;
  int product_roundings;
};
constexpr WinogradProducts kBf16Products{kBf16Unit, 0}, kF32Products{0, 1};

/// The Winograd bound for the output y[n][q][y][x] of a stride-1 3x3 convolution of
/// `in` ([n, c, h, w]) with filters `filt(q, ci, i, j)`: the products multiply the
/// transformed tile V = B^T d B and filter U = G g G^T, each rounded to the products' type
/// (u: u_bf or 0) after float32 transforms, and A^T m A adds up to 9 of them. With
/// |U| <= |G||g||G^T| and |V| <= |B^T||d||B| elementwise, each output is within
///   (2 u + u^2 + (c + 24 + p) u_32) * sum_{k,l} |A^T_ik||A^T_jl| sum_c |G||g||G^T| |B^T||d||B|
/// of the exact convolution: rounding both factors, plus float32 error in the transforms
/// (at most 4 + 4 operations each), the products (p: 0 or 1 rounding), the sum over c and
/// the output transform (3 + 3).
std::vector<double> winograd_bound(const std::vector<double>& in, std::int64_t n, std::int64_t c, std::int64_t h,
                                   std::int64_t w, std::int64_t o, std::int64_t pad,
                                   const std::function<double(std::int64_t, std::int64_t, int, int)>& filt,
                                   WinogradProducts products) {
  using Mx = backend::cpu::winograd::Matrices<3>;
  const std::int64_t oh = h + 2 * pad - 2, ow = w + 2 * pad - 2;
  std::vector<double> bound(static_cast<std::size_t>(n * o * oh * ow));
  std::vector<double> ug(static_cast<std::size_t>(o * c * 16));  // |G||g||G^T|
  for (std::int64_t q = 0; q < o; ++q)
    for (std::int64_t ci = 0; ci < c; ++ci)
      for (int a = 0; a < 4; ++a)
        for (int bb = 0; bb < 4; ++bb) {
          double s = 0;
          for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j)
              s += std::fabs(Mx::G[a][i]) * std::fabs(filt(q, ci, i, j)) * std::fabs(Mx::G[bb][j]);
          ug[static_cast<std::size_t>((q * c + ci) * 16 + a * 4 + bb)] = s;
        }
  const double u = products.operand_unit;
  const double factor = 2 * u + u * u + static_cast<double>(c + 24 + products.product_roundings) * kF32Unit;
  std::vector<double> vd(static_cast<std::size_t>(c * 16));  // |B^T||d||B| of one tile
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t ty = 0; ty < (oh + 1) / 2; ++ty)
      for (std::int64_t tx = 0; tx < (ow + 1) / 2; ++tx) {
        input_tile_magnitudes(in, b, c, h, w, pad, ty, tx, vd);
        for (std::int64_t q = 0; q < o; ++q)
          for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 2; ++j) {
              const std::int64_t y = 2 * ty + i, x = 2 * tx + j;
              if (y >= oh || x >= ow) continue;
              double s = 0;
              for (int a = 0; a < 4; ++a)
                for (int bb = 0; bb < 4; ++bb) {
                  const double at = std::fabs(Mx::AT[i][a]) * std::fabs(Mx::AT[j][bb]);
                  if (at == 0) continue;
                  for (std::int64_t ci = 0; ci < c; ++ci)
                    s += at * ug[static_cast<std::size_t>((q * c + ci) * 16 + a * 4 + bb)] *
                         vd[static_cast<std::size_t>(ci * 16 + a * 4 + bb)];
                }
              bound[static_cast<std::size_t>(((b * o + q) * oh + y) * ow + x)] = factor * s;
            }
      }
  return bound;
}

/// The Winograd bound for the weight gradient of the same convolution (gy: [n, o, oh, ow]):
/// dw[q][ci] = G^T (sum over tiles of E (.) V) G, with E = A e A^T of each output-gradient
/// tile e and V = B^T d B of the input tile under it, both float32 transforms (<= 4
/// roundings each) rounded to the products' type (u), their products (p roundings) summed
/// over the T tiles in float32 (in groups, then across chunks: T + 2 roundings at most),
/// then G^T . G in double and one rounding to float32. With
/// f = (1 + u)^2 (1 + (T + 24 + p) u_32) - 1, each weight is within
///   f * sum_tiles sum_{a,b} |G_ai||G_bj| (|A||e||A^T|)_ab (|B^T||d||B|)_ab.
std::vector<double> winograd_weight_grad_bound(const std::vector<double>& in, const std::vector<double>& gy,
                                               std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w,
                                               std::int64_t o, std::int64_t pad, WinogradProducts products) {
  using Mx = backend::cpu::winograd::Matrices<3>;
  const std::int64_t oh = h + 2 * pad - 2, ow = w + 2 * pad - 2, th = (oh + 1) / 2, tw = (ow + 1) / 2;
  std::vector<double> sums(static_cast<std::size_t>(o * c * 16));  // sum over tiles of |E| |V|
  std::vector<double> vd(static_cast<std::size_t>(c * 16)), ed(static_cast<std::size_t>(o * 16));
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t ty = 0; ty < th; ++ty)
      for (std::int64_t tx = 0; tx < tw; ++tx) {
        input_tile_magnitudes(in, b, c, h, w, pad, ty, tx, vd);
        for (int a = 0; a < 4; ++a)
          for (int bb = 0; bb < 4; ++bb) {
            for (std::int64_t q = 0; q < o; ++q) {
              double s = 0;
              for (int i = 0; i < 2; ++i)
                for (int j = 0; j < 2; ++j) {
                  const std::int64_t y = 2 * ty + i, x = 2 * tx + j;
                  if (y >= oh || x >= ow) continue;
                  s += std::fabs(Mx::AT[i][a]) *
                       std::fabs(gy[static_cast<std::size_t>(((b * o + q) * oh + y) * ow + x)]) *
                       std::fabs(Mx::AT[j][bb]);
                }
              ed[static_cast<std::size_t>(q * 16 + a * 4 + bb)] = s;
            }
          }
        for (std::int64_t q = 0; q < o; ++q)
          for (std::int64_t ci = 0; ci < c; ++ci)
            for (int ab = 0; ab < 16; ++ab)
              sums[static_cast<std::size_t>((q * c + ci) * 16 + ab)] +=
                  ed[static_cast<std::size_t>(q * 16 + ab)] * vd[static_cast<std::size_t>(ci * 16 + ab)];
      }
  const double tiles = static_cast<double>(n * th * tw);
  const double u = products.operand_unit;
  const double f = (1 + u) * (1 + u) * (1 + (tiles + 24 + products.product_roundings) * kF32Unit) - 1;
  std::vector<double> bound(static_cast<std::size_t>(o * c * 9));
  for (std::int64_t qc = 0; qc < o * c; ++qc)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        double s = 0;
        for (int a = 0; a < 4; ++a)
          for (int bb = 0; bb < 4; ++bb)
            s +=
                std::fabs(Mx::G[a][i]) * std::fabs(Mx::G[bb][j]) * sums[static_cast<std::size_t>(qc * 16 + a * 4 + bb)];
        bound[static_cast<std::size_t>(qc * 9 + i * 3 + j)] = f * s;
      }
  return bound;
}

/// conv2d (conv2d_relu with `relu`) on the Winograd path, under autocast with `bf16`, else in
/// float32: y, dx and dw against float64 references within the bounds above (or as im2col
/// where a level has no Winograd).
void check_conv_winograd(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t o,
                         std::int64_t pad, bool relu, std::uint64_t seed, bool bf16) {
  Tensor x = uniform32({n, c, h, w}, seed), wt = uniform32({o, c, 3, 3}, seed + 1);
  const backend::Conv2dGeometry g{n, c, h, w, o, 3, 3, 1, 1, pad, pad, h + 2 * pad - 2, w + 2 * pad - 2};
  Tensor y;
  {
    std::optional<autocast> scope;
    if (bf16) scope.emplace();
    y = relu ? conv2d_relu(x, wt, Tensor(), 1, static_cast<int>(pad))
             : conv2d(x, wt, Tensor(), 1, static_cast<int>(pad));
  }
  const Tensor gy = uniform32(y.shape(), seed + 2, false).to(y.dtype());
  y.backward(gy);
  // The fused ReLU passes the output gradient where its (computed) output is positive.
  auto gv = values(gy, false);
  const auto xv = values(x, false), wv = values(wt, false), yv = values(y, false);
  if (relu)
    for (std::size_t i = 0; i < gv.size(); ++i) gv[i] = yv[i] > 0 ? gv[i] : 0.0;
  const Conv cv(n, c, h, w, o, 3, 1, pad);
  auto [fy, fdx, fdw] = conv_sums(cv, xv, wv, gv);
  // max(., 0) moves no value further from the other: the bounds hold after it.
  if (relu)
    for (double& v : fy.want) v = std::max(v, 0.0);
  if (!backend::cpu::uses_winograd<float>(g)) {
    // At the baseline level the im2col path: in bfloat16 the operands themselves rounded,
    // so the exact result is within (2 u_bf + u_bf^2) sum |a b| of the rounded one; in
    // float32 each product rounded once more.
    WARN("level " << backend::cpu::isa_name(backend::cpu::isa()) << ": no Winograd path; checked as im2col");
    const auto rounded_bound = [&](const Sums& sums, std::int64_t k) {
      auto bound = sums.bound(bf16 ? k : k + 1);
      if (bf16)
        for (std::size_t i = 0; i < bound.size(); ++i)
          bound[i] += (2 * kBf16Unit + kBf16Unit * kBf16Unit) * sums.mag[i];
      return bound;
    };
    check_within(y, fy.want, rounded_bound(fy, c * 9));
    check_within(x.grad(), fdx.want, rounded_bound(fdx, o * 9));
    check_within(wt.grad(), fdw.want, rounded_bound(fdw, n * g.oh * g.ow));
    return;
  }
  const auto filt = [&](std::int64_t q, std::int64_t ci, int i, int j) {
    return wv[static_cast<std::size_t>(((q * c + ci) * 3 + i) * 3 + j)];
  };
  const WinogradProducts products = bf16 ? kBf16Products : kF32Products;
  check_within(y, fy.want, winograd_bound(xv, n, c, h, w, o, pad, filt, products));
  // The input gradient: gy convolved with the flipped filters, padding 2 - pad.
  const auto flipped = [&](std::int64_t ci, std::int64_t q, int i, int j) {
    return wv[static_cast<std::size_t>(((q * c + ci) * 3 + (2 - i)) * 3 + (2 - j))];
  };
  check_within(x.grad(), fdx.want, winograd_bound(gv, n, o, g.oh, g.ow, c, 2 - pad, flipped, products));
  check_within(wt.grad(), fdw.want, winograd_weight_grad_bound(xv, gv, n, c, h, w, o, pad, products));
}

}  // namespace autocast_testing

using namespace autocast_testing;

TEST_CASE("autocast: conv2d's im2col products are bfloat16 with float32 sums, forward and backward",
          "[ops][autocast]") {
  ThreadCountRestorer restore;
  FillUninitialized fill;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    INFO(threads << " threads");
    check_conv_im2col(Conv(3, 20, 12, 12, 50, 5, 1, 0), 100);  // LeNet's second layer, 3 images
    check_conv_im2col(Conv(2, 3, 9, 9, 4, 5, 2, 1), 200);      // strided and padded
    check_conv_im2col(Conv(5, 2, 6, 7, 3, 3, 1, 1), 300);      // few channels: not Winograd
    // Even channel counts take columns of channel pairs where the CPU has AVX512-BF16:
    check_conv_im2col(Conv(2, 4, 9, 9, 6, 3, 2, 1), 310);  // strided and padded
    check_conv_im2col(Conv(2, 4, 8, 8, 3, 1, 2, 0), 320);  // 1x1, stride 2: no room, float columns
    // Rows of columns of odd length, one channel, and output rows longer than a vector:
    check_conv_im2col(Conv(3, 3, 7, 7, 4, 3, 1, 0), 330);    // rows of 75 columns, padded to 76
    check_conv_im2col(Conv(2, 1, 12, 13, 4, 6, 1, 0), 340);  // one channel (6x6: not the direct forward)
    check_conv_im2col(Conv(1, 2, 5, 40, 3, 3, 1, 0), 350);   // output rows of 38: two vectors each
    // Output rows of 16, 4 and 2 (the bfloat16 weight-gradient columns pack 2, 8 and 16 rows
    // to a vector), and the last sample's input ending where its buffer ends:
    check_conv_im2col(Conv(2, 2, 20, 20, 3, 5, 1, 0), 360);
    check_conv_im2col(Conv(3, 2, 8, 8, 3, 5, 1, 0), 370);
    check_conv_im2col(Conv(2, 3, 6, 6, 2, 5, 1, 0), 380);
    // One input channel: the direct kernel (pairs of taps with AVX512-BF16), as the example
    // networks' first layers, padded, and with rows of outputs longer than two vectors.
    check_conv_im2col(Conv(3, 1, 28, 28, 20, 5, 1, 0), 390);
    check_conv_im2col(Conv(2, 1, 28, 28, 32, 3, 1, 0), 392);
    check_conv_im2col(Conv(2, 1, 9, 11, 6, 3, 1, 1), 394);
    check_conv_im2col(Conv(2, 1, 7, 40, 11, 5, 1, 2), 396);
    // A first layer's backward (no input gradient): the output gradient masked straight into
    // bfloat16 rows with AVX512-BF16; with and without the fused ReLU.
    check_conv_im2col(Conv(3, 1, 28, 28, 20, 5, 1, 0), 398, true, false);
    check_conv_im2col(Conv(2, 1, 28, 28, 32, 3, 1, 0), 400, true, false);
    check_conv_im2col(Conv(2, 1, 9, 11, 6, 3, 1, 1), 402, false, false);
    check_conv_im2col(Conv(3, 20, 12, 12, 50, 5, 1, 0), 404, true, true);  // LeNet's conv2, fused
  }
}

namespace autocast_testing {

/// check_conv_winograd over paddings, the fused ReLU and NET's 26x26 input, at 1 and 2
/// threads.
void check_winograd_cases(bool bf16) {
  ThreadCountRestorer restore;
  FillUninitialized fill;  // scratch and operand padding the kernels leave unwritten would show
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (std::int64_t pad : {0, 1})
      for (bool relu : {false, true}) {
        INFO(threads << " threads, padding " << pad << (relu ? ", fused ReLU" : ""));
        check_conv_winograd(2, 16, 9, 10, 24, pad, relu, 400, bf16);
      }
    // 144 tiles an image: the weight gradient sums several groups of images per chunk.
    INFO(threads << " threads, NET's 26x26 input");
    check_conv_winograd(5, 16, 26, 26, 16, 0, true, 410, bf16);
    // Odd channel counts (the last pair of channels half padding, in both directions) and
    // an odd tile count (25 an image: the rows of tiles padded).
    INFO(threads << " threads, 17 -> 19 channels, one image of 9x9");
    check_conv_winograd(1, 17, 9, 9, 19, 1, false, 420, bf16);
    // 40 input channels: the bfloat16 weight gradient transposes its input's tiles 16
    // channels by 16 pairs of tiles at a time, the last block of channels half empty; 25
    // tiles an image (75 in one group: 38 pairs, the last one half padding).
    INFO(threads << " threads, 40 -> 16 channels, 3 images of 12x12");
    check_conv_winograd(3, 40, 12, 12, 16, 0, false, 430, bf16);
  }
}

}  // namespace autocast_testing

TEST_CASE("autocast: conv2d on the Winograd path stays within the bound of its rounded transforms", "[ops][autocast]") {
  check_winograd_cases(true);
}

TEST_CASE("conv2d: Winograd in float32 (its weight gradient included) stays within the bound of its transforms",
          "[ops][conv2d]") {
  check_winograd_cases(false);
}

TEST_CASE("autocast: conv2d on the Winograd path sums the bias's gradient and takes either gradient alone",
          "[ops][autocast]") {
  ThreadCountRestorer restore;
  FillUninitialized fill;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (DType input : {DType::float32, DType::bfloat16}) {
      INFO(threads << " threads, " << (input == DType::float32 ? "float32" : "bfloat16") << " input");
      // NET's second layer, fused with its ReLU: the output gradient is masked into bfloat16
      // columns (with AVX512-BF16) that both transforms read, the bias's sums taken as it is.
      const Shape xs{3, 32, 26, 26};
      const auto run = [&](bool x_grad, bool w_grad) {
        // A bfloat16 input through a recorded cast (only float tensors require grad).
        Tensor x32 = uniform32(xs, 500, x_grad), wt = uniform32({64, 32, 3, 3}, 501, w_grad), b = uniform32({64}, 502);
        Tensor y;
        {
          autocast scope;
          y = conv2d_relu(input == DType::float32 ? x32 : cast(x32, input), wt, b, 1, 0);
        }
        const Tensor gy = uniform32(y.shape(), 503, false).to(DType::bfloat16);
        y.backward(gy);
        return std::tuple{y, gy, x32.grad(), wt.grad(), b.grad()};
      };
      const auto [y, gy, dx, dw, db] = run(true, true);
      // db: the float64 sum of the output gradient where the output is positive.
      const auto yv = values(y, false), gv = values(gy, false);
      Sums fdb(64);
      for (std::size_t i = 0; i < gv.size(); ++i)
        if (yv[i] > 0) fdb.add(static_cast<std::int64_t>(i) / (24 * 24) % 64, gv[i]);
      check_within(db, fdb.want, fdb.bound(3 * 24 * 24));
      // Either gradient alone: the same products, so the same values, bit for bit (the
      // bias's sums group the images as the weight gradient does or not: within the bound).
      const auto [y_dx, gy_dx, dx_only, dw_none, db_dx] = run(true, false);
      const auto [y_dw, gy_dw, dx_none, dw_only, db_dw] = run(false, true);
      REQUIRE_FALSE(dw_none.defined());
      REQUIRE_FALSE(dx_none.defined());
      REQUIRE(values(dx_only, false) == values(dx, false));
      REQUIRE(values(dw_only, false) == values(dw, false));
      check_within(db_dx, fdb.want, fdb.bound(3 * 24 * 24));
      check_within(db_dw, fdb.want, fdb.bound(3 * 24 * 24));
    }
  }
}

namespace autocast_testing {

/// Two backward passes through conv2d under autocast with the same x and w: the second adds
/// its dx and dw into the first's. The first pass is within b1 = gamma_K m1 of its rounded
/// operands' sum (m: the sum of |ab|). The second adds to that value r1 either after its own
/// sums (within b1 + gamma_K m2 + u (m1 + m2 + b1 + gamma_K m2)) or as one more of K + 1
/// terms (within b1 + gamma_{K+1} (|r1| + m2), |r1| <= m1 + b1): both within
/// b1 + gamma_{K+1} (m1 + m2 + b1), since gamma_{K+1} >= gamma_K + u (1 + gamma_K).
void check_conv_accumulates(const Conv& cv, std::uint64_t seed) {
  INFO("conv2d of " << cv.n << " x " << cv.c << " x " << cv.h << " x " << cv.w << " by " << cv.o
                    << " 3x3 filters, padding " << cv.pad << ", gradients added twice");
  Tensor x = uniform32({cv.n, cv.c, cv.h, cv.w}, seed), wt = uniform32({cv.o, cv.c, cv.k, cv.k}, seed + 1);
  std::vector<double> gys[2];
  for (int pass = 0; pass < 2; ++pass) {
    Tensor y;
    {
      autocast scope;
      y = conv2d(x, wt, Tensor(), static_cast<int>(cv.stride), static_cast<int>(cv.pad));
    }
    const Tensor gy = uniform32(y.shape(), seed + 2 + static_cast<std::uint64_t>(pass), false).to(DType::bfloat16);
    y.backward(gy);
    gys[pass] = values(gy, false);
  }
  const auto xv = values(x, true), wv = values(wt, true);
  const ConvSums first = conv_sums(cv, xv, wv, gys[0]), second = conv_sums(cv, xv, wv, gys[1]);
  const auto added = [](const Sums& a, const Sums& b, std::int64_t k) {
    std::vector<double> want(a.want.size()), bound(a.want.size());
    const std::vector<double> b1 = a.bound(k);
    for (std::size_t i = 0; i < want.size(); ++i) {
      want[i] = a.want[i] + b.want[i];
      bound[i] = b1[i] + gamma32(k + 1) * (a.mag[i] + b.mag[i] + b1[i]);
    }
    return std::pair{want, bound};
  };
  const auto [dx_want, dx_bound] = added(first.dx, second.dx, cv.o * cv.k * cv.k);
  const auto [dw_want, dw_bound] = added(first.dw, second.dw, cv.n * cv.oh * cv.ow);
  {
    INFO("dx");
    check_within(x.grad(), dx_want, dx_bound);
  }
  INFO("dw");
  check_within(wt.grad(), dw_want, dw_bound);
}

}  // namespace autocast_testing

TEST_CASE("autocast: 3x3 convolutions with channels in 16s are the rounded operands' products on AMX tiles",
          "[ops][autocast]") {
  // At the amx level these layers are direct convolutions on tiles (no Winograd transforms):
  // forward, both gradients, the gradients added into existing ones, with padding 0 to 2.
  if (backend::cpu::isa() != backend::cpu::Isa::amx) {
    WARN("level " << backend::cpu::isa_name(backend::cpu::isa())
                  << ": no AMX tiles, these shapes take Winograd or im2col (checked by their own test cases)");
    return;
  }
  ThreadCountRestorer restore;
  FillUninitialized fill;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    INFO(threads << " threads");
    check_conv_products(Conv(2, 16, 9, 10, 32, 3, 1, 1), 600);
    check_conv_products(Conv(3, 32, 8, 8, 16, 3, 1, 0), 610, true);
    check_conv_products(Conv(2, 16, 7, 7, 16, 3, 1, 2), 620);
    check_conv_products(Conv(3, 16, 8, 8, 16, 3, 1, 1), 630, true, false);  // the weight gradient alone
    check_conv_accumulates(Conv(3, 16, 8, 8, 32, 3, 1, 1), 640);
    check_conv_accumulates(Conv(3, 16, 8, 8, 16, 3, 1, 1), 650);  // dx of 16 channels: paired taps
  }
}

TEST_CASE("autocast: linear and matmul products are bfloat16 with float32 sums", "[ops][autocast]") {
  ThreadCountRestorer restore;
  for (int threads : {1, 2})
    for (auto [batch, in, out] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{5, 37, 11},
                                  {64, 600, 64},
                                  {64, 4200, 70},
                                  {33, 3335, 41},
                                  {600, 700, 9},
                                  {2000, 40, 30}}) {
      set_num_threads(threads);
      // From the third on, large enough for both threads to share the products. The third and
      // fourth round their inputs in chunks (the last chunk of 3335 odd, padded); the fourth
      // has odd sums everywhere (33 samples, 3335 inputs, 41 outputs: one row in the
      // weights' last block). The last two have too few outputs, or inputs, to split the
      // threads over them: the batch's rows are split instead.
      INFO(threads << " threads, linear " << batch << "x" << in << " -> " << out);
      Tensor x = uniform32({batch, in}, 500), wt = uniform32({out, in}, 501), b = uniform32({out}, 502);
      Tensor y, again;
      {
        autocast scope;
        y = linear(x, wt, b);
        again = linear(x, wt, b);  // the second backward accumulates into x's and w's gradients
      }
      const Tensor gy = uniform32(y.shape(), 503, false);
      add(y, again).backward(gy);
      const auto xv = values(x, true), wv = values(wt, true), gv = values(gy, true);
      Sums fy(static_cast<std::size_t>(batch * out)), fdx(static_cast<std::size_t>(batch * in)),
          fdw(static_cast<std::size_t>(out * in));
      for (std::int64_t r = 0; r < batch; ++r)
        for (std::int64_t q = 0; q < out; ++q) {
          fy.add(r * out + q, b.data<float>()[q]);
          for (std::int64_t i = 0; i < in; ++i) {
            fy.add(r * out + q, xv[r * in + i] * wv[q * in + i]);
            fdx.add(r * in + i, gv[r * out + q] * wv[q * in + i]);
            fdw.add(q * in + i, gv[r * out + q] * xv[r * in + i]);
          }
        }
      check_within(y, fy.want, fy.bound(in + 1));
      // Twice the product, each within gamma_K; their float32 sum adds one rounding (<= u
      // of its magnitude, itself <= 2 sum |a b|): within 2 gamma_(K+1) sum |a b|.
      const auto twice = [](Sums s, std::int64_t k) {
        auto bound = s.bound(k + 1);
        for (std::size_t i = 0; i < bound.size(); ++i) {
          s.want[i] *= 2;
          bound[i] *= 2;
        }
        return std::pair{s.want, bound};
      };
      const auto [want_dx, bound_dx] = twice(fdx, out);
      check_within(x.grad(), want_dx, bound_dx);
      const auto [want_dw, bound_dw] = twice(fdw, batch);
      check_within(wt.grad(), want_dw, bound_dw);
    }
  Tensor a = uniform32({7, 33}, 600), m = uniform32({33, 9}, 601);
  Tensor y;
  {
    autocast scope;
    y = matmul(a, m);
  }
  const Tensor gy = uniform32(y.shape(), 602, false);
  y.backward(gy);
  const auto av = values(a, true), mv = values(m, true), gv = values(gy, true);
  Sums fy(63), fda(7 * 33), fdm(33 * 9);
  for (std::int64_t i = 0; i < 7; ++i)
    for (std::int64_t j = 0; j < 9; ++j)
      for (std::int64_t p = 0; p < 33; ++p) {
        fy.add(i * 9 + j, av[i * 33 + p] * mv[p * 9 + j]);
        fda.add(i * 33 + p, gv[i * 9 + j] * mv[p * 9 + j]);
        fdm.add(p * 9 + j, av[i * 33 + p] * gv[i * 9 + j]);
      }
  check_within(y, fy.want, fy.bound(33));
  check_within(a.grad(), fda.want, fda.bound(9));
  check_within(m.grad(), fdm.want, fdm.bound(7));
}

TEST_CASE("autocast: every other op runs in float32, and float64 is left alone", "[ops][autocast]") {
  // PyTorch's CPU autocast runs these in float32 (softmax, log_softmax, the losses,
  // reductions, batch norm) or in the input's type (relu, pooling, dropout, arithmetic):
  // with float32 inputs, the same bits inside and outside the scope.
  const Tensor x = uniform32({4, 3, 8, 8}, 700, false), v = uniform32({6, 10}, 701, false);
  const Tensor target = from_vector(std::vector<std::int64_t>{1, 0, 9, 3, 3, 7}, {6});
  const Tensor gamma = uniform32({3}, 702, false), beta = uniform32({3}, 703, false);
  const auto run = [&] {
    manual_seed(5);
    return std::vector<Tensor>{relu(x),
                               max_pool2d(x, 2),
                               avg_pool2d(x, 2),
                               dropout(x, 0.25),
                               log_softmax(v, 1),
                               softmax(v, 1),
                               nll_loss(log_softmax(v, 1), target),
                               cross_entropy(v, target),
                               sum(x),
                               mean(v),
                               add(x, x),
                               mul(v, v),
                               batch_norm(x, Tensor(), Tensor(), gamma, beta, true, 0.1, 1e-5)};
  };
  const std::vector<Tensor> plain = run();
  std::vector<Tensor> cast;
  {
    autocast scope;
    cast = run();
  }
  REQUIRE(plain.size() == cast.size());
  for (std::size_t i = 0; i < plain.size(); ++i) {
    INFO("op " << i);
    REQUIRE(cast[i].dtype() == DType::float32);
    REQUIRE(std::memcmp(plain[i].data<float>(), cast[i].data<float>(), static_cast<std::size_t>(plain[i].nbytes())) ==
            0);
  }
  // float64 products too: autocast casts float32 only.
  const Tensor xd = testing::random_input({5, 40}, 704, false), wd = testing::random_input({3, 40}, 705, false);
  const Tensor outside = linear(xd, wd);
  Tensor inside;
  {
    autocast scope;
    inside = linear(xd, wd);
  }
  REQUIRE(std::memcmp(outside.data<double>(), inside.data<double>(), static_cast<std::size_t>(inside.nbytes())) == 0);
}

TEST_CASE("autocast: only the scope's products change, and backward follows the recording", "[ops][autocast]") {
  Tensor x = uniform32({8, 50}, 800), wt = uniform32({6, 50}, 801);
  const auto grads = [&](bool record_bf16, bool backward_bf16) {
    x.set_grad(Tensor());
    wt.set_grad(Tensor());
    Tensor y;
    {
      autocast scope(DeviceType::cpu, DType::bfloat16, record_bf16);
      y = linear(x, wt);
    }
    {
      autocast scope(DeviceType::cpu, DType::bfloat16, backward_bf16);
      sum(mul(y, y)).backward();
    }
    return std::pair{y, wt.grad().clone()};
  };
  const auto [y32, g32] = grads(false, false);
  const auto [y16, g16] = grads(true, false);
  const auto [y16b, g16b] = grads(true, true);
  const auto [y32b, g32b] = grads(false, true);
  const auto same = [](const Tensor& a, const Tensor& b) {
    return std::memcmp(a.data<float>(), b.data<float>(), static_cast<std::size_t>(a.nbytes())) == 0;
  };
  REQUIRE_FALSE(same(y32, y16));  // random operands are not bfloat16 values
  REQUIRE_FALSE(same(g32, g16));
  REQUIRE(same(y16, y16b));  // the node remembers how its forward multiplied...
  REQUIRE(same(g16, g16b));
  REQUIRE(same(y32, y32b));  // ...whatever scope its backward runs in
  REQUIRE(same(g32, g32b));
}

TEST_CASE("autocast: scopes nest and restore, per device type", "[ops][autocast]") {
  REQUIRE_FALSE(is_autocast_enabled());
  {
    autocast outer;
    REQUIRE(is_autocast_enabled(DeviceType::cpu));
    REQUIRE_FALSE(is_autocast_enabled(DeviceType::cuda));
    {
      autocast inner(DeviceType::cpu, DType::bfloat16, false);
      REQUIRE_FALSE(is_autocast_enabled());
    }
    REQUIRE(is_autocast_enabled());
  }
  REQUIRE_FALSE(is_autocast_enabled());
}

TEST_CASE("autocast: misuse throws errors that name the problem", "[ops][autocast][errors]") {
  REQUIRE_THROWS_WITH((autocast{DeviceType::cpu, DType::float32}),
                      Catch::Contains("bfloat16") && Catch::Contains("float32"));
  REQUIRE_FALSE(is_autocast_enabled());
  // Parameters are float32 (the master copy; autocast rounds them itself); a bfloat16
  // activation is taken (ops_tests "[bf16]"), bfloat16 weights are not.
  const Tensor x = uniform32({2, 3, 8, 8}, 900, false), wt = uniform32({4, 3, 3, 3}, 901, false).to(DType::bfloat16);
  autocast scope;
  REQUIRE_THROWS_WITH(conv2d(x, wt), Catch::Contains("conv2d: weight") && Catch::Contains("bfloat16"));
  REQUIRE_THROWS_WITH(linear(uniform32({2, 5}, 902, false), uniform32({3, 5}, 903, false).to(DType::float64)),
                      Catch::Contains("linear") && Catch::Contains("float64"));
}

TEST_CASE("autocast: training is deterministic for a seed and a thread count", "[ops][autocast]") {
  ThreadCountRestorer restore;
  set_num_threads(2);
  const auto train = [] {
    manual_seed(3);
    Tensor w1 = uniform32({16, 1, 3, 3}, 1000), w2 = uniform32({16, 16, 3, 3}, 1001),
           w3 = uniform32({10, 16 * 4 * 4}, 1002);
    const Tensor x = uniform32({8, 1, 12, 12}, 1003, false);
    const Tensor target = from_vector(std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7}, {8});
    optim::SGD sgd({w1, w2, w3}, {.lr = 0.1, .momentum = 0.9});
    for (int step = 0; step < 3; ++step) {
      sgd.zero_grad();
      Tensor loss;
      {
        autocast scope;
        Tensor h = max_pool2d(conv2d_relu(conv2d_relu(x, w1), w2), 2);
        loss = nll_loss(log_softmax(linear(dropout(h.reshape({8, 16 * 4 * 4}), 0.25), w3), 1), target);
      }
      loss.backward();
      sgd.step();
    }
    return std::vector<Tensor>{w1, w2, w3};
  };
  const auto first = train(), second = train();
  for (std::size_t i = 0; i < first.size(); ++i)
    REQUIRE(std::memcmp(first[i].data<float>(), second[i].data<float>(), static_cast<std::size_t>(first[i].nbytes())) ==
            0);
}
