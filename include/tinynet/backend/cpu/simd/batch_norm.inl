/// \file
/// batch_norm's kernels at one vector level (backend/cpu/batch_norm.hpp has the formulas).
/// The input x (and its gradient dx) has element type X, the rest T: X = T = float or
/// double, or, under autocast (Level::batch_norm_bf16: every level), X = bfloat16 read as
/// it is, T = float.
/// The statistics and the backward's sums are taken per plane (sample i, channel c), in
/// parallel over the N * C planes, since ResNet's 16 to 64 channels are too few to split
/// over threads by channel alone; the planes' partial sums are then combined per channel in
/// double in sample order, so results do not depend on the threads. Within a plane, float
/// vectors sum runs of kBnRun elements, each run's sum then added in double (float at the
/// AVX2 and AVX-512 levels, planes of at least kLanes elements); elsewhere every element is
/// added in double.

namespace detail {

/// Elements a vector of float lanes sums before its total joins the double sum: 32 or 64
/// additions per lane keep float rounding far below the statistics' own.
inline constexpr std::int64_t kBnRun = 1024;

/// Indices per parallel chunk when each index covers `per_index` elements (a plane's hw,
/// or a channel's n partial sums): about kElementwiseGrain elements.
inline std::int64_t bn_grain(std::int64_t per_index) {
  return std::max<std::int64_t>(1, kElementwiseGrain / std::max<std::int64_t>(per_index, 1));
}

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
/// The input types the vector paths read (load_elems): float, and bfloat16 where the level
/// has batch_norm's bfloat16 kernels (AVX2's load_elems widens it too).
template <typename X>
inline constexpr bool kBnVector = std::is_same_v<X, float> || (std::is_same_v<X, bfloat16> && Level::batch_norm_bf16);

/// v in the lanes of m, zero in the others.
inline Vec zero_outside(Mask m, Vec v) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX512
  return {_mm512_maskz_mov_ps(m, v.v)};
#else
  return {_mm256_and_ps(_mm256_castsi256_ps(m), v.v)};
#endif
}

/// out[k] += the sums over [0, n) that add(i, lanes, acc) accumulates into acc[k] for the
/// elements from i in `lanes`. Two sets of accumulators alternate (two dependency chains);
/// each run of kBnRun elements is summed across lanes and added to out in double.
template <int K, typename Add>
void add_run_sums(std::int64_t n, double (&out)[K], const Add& add) {
  const Mask all = tail_mask(kLanes);
  for (std::int64_t lo = 0; lo < n; lo += kBnRun) {
    const std::int64_t hi = std::min(n, lo + kBnRun);
    Vec a[K], b[K];
    for (int k = 0; k < K; ++k) a[k] = b[k] = Vec::zero();
    std::int64_t i = lo;
    for (; i + 2 * kLanes <= hi; i += 2 * kLanes) {
      add(i, all, a);
      add(i + kLanes, all, b);
    }
    for (; i < hi; i += kLanes) add(i, tail_mask(hi - i), a);
    for (int k = 0; k < K; ++k) out[k] += static_cast<double>(sum(a[k] + b[k]));
  }
}
#endif

/// The sum of the n elements at p, and m2: their squared deviations from their own mean,
/// summed (two sweeps; the second finds the plane in cache).
template <typename X>
void plane_moments(const X* p, std::int64_t n, double& total, double& m2) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
  if constexpr (kBnVector<X>) {
    if (n >= kLanes) {
      // Deviations from the first element are summed: float runs then round relative to
      // the spread, not to a mean that may be far larger.
      const float first_value = static_cast<float>(p[0]);
      const Vec first = Vec::set1(first_value);
      double s[1] = {0}, q[1] = {0};
      add_run_sums(n, s, [&](std::int64_t i, Mask m, Vec(&acc)[1]) {
        acc[0] = acc[0] + zero_outside(m, load_elems(p + i, m) - first);
      });
      total = static_cast<double>(n) * first_value + s[0];
      const Vec mean = Vec::set1(static_cast<float>(total / static_cast<double>(n)));
      add_run_sums(n, q, [&](std::int64_t i, Mask m, Vec(&acc)[1]) {
        const Vec d = zero_outside(m, load_elems(p + i, m) - mean);
        acc[0] = fmadd(d, d, acc[0]);
      });
      m2 = q[0];
      return;
    }
  }
#endif
  double s = 0, q = 0;
  for (std::int64_t j = 0; j < n; ++j) s += static_cast<double>(p[j]);
  const double mean = s / static_cast<double>(n);
  for (std::int64_t j = 0; j < n; ++j) q += (static_cast<double>(p[j]) - mean) * (static_cast<double>(p[j]) - mean);
  total = s;
  m2 = q;
}

/// sum(dy) and sum(dy (x - mean)) over the n elements of one plane of x and gy; dy is gy,
/// or, through a ReLU whose output was y_relu (not null), gy where y_relu > 0.
template <typename X, typename T>
void plane_grad_sums(const X* x, const T* gy, const T* y_relu, std::int64_t n, T mean, double& sum_dy,
                     double& sum_dy_xc) {
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
  if constexpr (std::is_same_v<T, float> && kBnVector<X>) {
    if (n >= kLanes) {
      const Vec mv = Vec::set1(mean);
      double s[2] = {0, 0};
      add_run_sums(n, s, [&](std::int64_t i, Mask m, Vec(&acc)[2]) {
        Vec g = Vec::load(gy + i, m);  // zero outside m, so are both terms
        if (y_relu) g = where_positive(Vec::load(y_relu + i, m), g);
        acc[0] = acc[0] + g;
        acc[1] = fmadd(g, load_elems(x + i, m) - mv, acc[1]);
      });
      sum_dy = s[0];
      sum_dy_xc = s[1];
      return;
    }
  }
#endif
  double s = 0, sx = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    const T dy = batch_norm_dy(gy, y_relu, j);
    s += dy;
    sx += static_cast<double>(dy) * (static_cast<double>(x[j]) - static_cast<double>(mean));
  }
  sum_dy = s;
  sum_dy_xc = sx;
}

}  // namespace detail

/// batch_norm_train_stats at this level: each plane's sum and m2, then per channel
/// mean = sum / M and M var = sum of the planes' m2 + sum of hw (plane mean - mean)^2.
template <typename X, typename T>
void batch_norm_train_stats(Level, const BatchNormGeometry& g, const X* x, T* mean, T* var, T* invstd, T* running_mean,
                            T* running_var, double momentum, double eps) {
  const std::int64_t planes = g.n * g.c;
  Scratch<double> parts(2 * planes);  // plane r: sum, m2
  double* part = parts.data();
  parallel_for(planes, detail::bn_grain(g.hw), [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t r = lo; r < hi; ++r) detail::plane_moments(x + r * g.hw, g.hw, part[2 * r], part[2 * r + 1]);
  });
  const double m = static_cast<double>(g.count()), hw = static_cast<double>(g.hw);
  parallel_for(g.c, detail::bn_grain(g.n), [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t c = lo; c < hi; ++c) {
      double s = 0, m2 = 0, spread = 0;
      for (std::int64_t i = 0; i < g.n; ++i) s += part[2 * (i * g.c + c)];
      const double mu = s / m;
      for (std::int64_t i = 0; i < g.n; ++i) {
        const double* p = part + 2 * (i * g.c + c);
        m2 += p[1];
        spread += (p[0] - hw * mu) * (p[0] - hw * mu);
      }
      mean[c] = static_cast<T>(mu);
      var[c] = static_cast<T>((m2 + spread / hw) / m);
    }
  });
  const BatchNormFinalize<T> finalize{mean, var, invstd, running_mean, running_var, momentum, eps, m / (m - 1)};
  for (std::int64_t c = 0; c < g.c; ++c) finalize(c);
}

/// batch_norm_apply at this level.
template <typename X, typename T>
void batch_norm_apply(Level, const BatchNormGeometry& g, const X* x, const T* mean, const T* invstd, const T* w,
                      const T* b, T* y, bool relu) {
  parallel_for(g.n * g.c, detail::bn_grain(g.hw), [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t r = lo; r < hi; ++r) {
      const std::int64_t c = r % g.c;
      const T scale = invstd[c] * (w ? w[c] : T(1)), mu = mean[c], shift = b ? b[c] : T(0);
      const X* p = x + r * g.hw;
      T* q = y + r * g.hw;
      // x - mean first: folding the mean into the shift would cancel where it is large.
      // Two loops, so that each is a plain one the compiler vectorises.
      if (relu)
        for (std::int64_t j = 0; j < g.hw; ++j) q[j] = Relu{}.forward((static_cast<T>(p[j]) - mu) * scale + shift);
      else
        for (std::int64_t j = 0; j < g.hw; ++j) q[j] = (static_cast<T>(p[j]) - mu) * scale + shift;
    }
  });
}

/// batch_norm_backward at this level: each plane's sums, then per channel; dx per plane as
/// k dy + kx (x - mean) + k0, with k = w invstd and, in training, kx = -k invstd
/// sum(dy xhat) / M, k0 = -k sum(dy) / M (else 0).
/// dy is gy, or, fused with the ReLU after it (y_relu, its output, not null), gy where
/// y_relu > 0.
template <typename X, typename T>
void batch_norm_backward(Level, const BatchNormGeometry& g, const X* x, const T* mean, const T* invstd, const T* w,
                         const T* gy, const T* y_relu, bool training, X* dx, bool acc_dx, T* dw, bool acc_dw, T* db,
                         bool acc_db, double* sums) {
  const std::int64_t planes = g.n * g.c;
  const std::int64_t grain = detail::bn_grain(g.hw);
  Scratch<double> parts(2 * planes);  // plane r: sum(dy), sum(dy (x - mean))
  double* part = parts.data();
  parallel_for(planes, grain, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t r = lo; r < hi; ++r)
      detail::plane_grad_sums(x + r * g.hw, gy + r * g.hw, y_relu ? y_relu + r * g.hw : nullptr, g.hw, mean[r % g.c],
                              part[2 * r], part[2 * r + 1]);
  });
  parallel_for(g.c, detail::bn_grain(g.n), [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t c = lo; c < hi; ++c) {
      double sum_dy = 0, sum_dy_xc = 0;
      for (std::int64_t i = 0; i < g.n; ++i) {
        sum_dy += part[2 * (i * g.c + c)];
        sum_dy_xc += part[2 * (i * g.c + c) + 1];
      }
      const double sum_dy_xhat = sum_dy_xc * invstd[c];
      sums[2 * c] = sum_dy;
      sums[2 * c + 1] = sum_dy_xhat;
      if (dw) dw[c] = (acc_dw ? dw[c] : T(0)) + static_cast<T>(sum_dy_xhat);
      if (db) db[c] = (acc_db ? db[c] : T(0)) + static_cast<T>(sum_dy);
    }
  });
  if (!dx) return;
  const double m = static_cast<double>(g.count());
  parallel_for(planes, grain, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t r = lo; r < hi; ++r) {
      const std::int64_t c = r % g.c;
      const T k = invstd[c] * (w ? w[c] : T(1)), mu = mean[c];
      const T kx = training ? static_cast<T>(-static_cast<double>(k) * invstd[c] * sums[2 * c + 1] / m) : T(0);
      const T k0 = training ? static_cast<T>(-static_cast<double>(k) * sums[2 * c] / m) : T(0);
      const X* xp = x + r * g.hw;
      const T* gp = gy + r * g.hw;
      const T* yp = y_relu ? y_relu + r * g.hw : nullptr;
      X* dp = dx + r * g.hw;
      // Plain loops (one per case) that the compiler vectorises; without batch statistics x
      // is not read (an infinite x would make 0 * (x - mean) NaN). A bfloat16 gradient is
      // added to as the cast it replaces would: the term rounded, then the sum (for float
      // and double, `in` and `out` are no-ops).
      const auto in = [](X v) { return static_cast<T>(v); };
      const auto out = [](T v) { return static_cast<X>(v); };
      const auto loops = [&](auto through_relu) {
        const auto dy = [&](std::int64_t j) {
          if constexpr (decltype(through_relu)::value)
            return Relu{}.backward(gp[j], T(0), yp[j]);
          else
            return gp[j];
        };
        if (training && acc_dx)
          for (std::int64_t j = 0; j < g.hw; ++j)
            dp[j] = out(in(dp[j]) + in(out(k * dy(j) + kx * (in(xp[j]) - mu) + k0)));
        else if (training)
          for (std::int64_t j = 0; j < g.hw; ++j) dp[j] = out(k * dy(j) + kx * (in(xp[j]) - mu) + k0);
        else if (acc_dx)
          for (std::int64_t j = 0; j < g.hw; ++j) dp[j] = out(in(dp[j]) + in(out(k * dy(j))));
        else
          for (std::int64_t j = 0; j < g.hw; ++j) dp[j] = out(k * dy(j));
      };
      if (yp)
        loops(std::true_type{});
      else
        loops(std::false_type{});
    }
  });
}
