/// \file
/// The SGD and Adadelta steps at one vector level: the rules of backend/optimizers.hpp on
/// a vector at a time (Vec) at the AVX2 and AVX-512 levels, per element elsewhere.

#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
/// Calls body(i, lanes) for i = 0, kLanes, 2 kLanes, ... < n in parallel chunks, `lanes`
/// masking the elements of [i, i + kLanes) inside the chunk.
template <typename Body>
void for_each_vector(std::int64_t n, const Body& body) {
  parallel_for(n, kElementwiseGrain, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; i += kLanes) body(i, detail::tail_mask(hi - i));
  });
}
#endif

/// sgd_update at this level.
template <typename T>
void sgd_update(Level, T* param, const T* grad, T* buf, std::int64_t n, const SgdArgs& a) {
  const SgdRule<T> rule(param, grad, buf, a);
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
  if constexpr (sizeof(T) == 4) {
    for_each_vector(n, [&](std::int64_t i, Mask m) {
      Vec p = Vec::load(param + i, m), g = Vec::load(grad + i, m),
          b = buf != nullptr ? Vec::load(buf + i, m) : Vec::zero();
      rule.update(p, g, b);
      p.store(param + i, m);
      if (buf != nullptr) b.store(buf + i, m);
    });
    return;
  }
#endif
  for_each_index(Tag{}, n, rule);
}

/// adadelta_update at this level.
template <typename T>
void adadelta_update(Level, T* param, const T* grad, T* square_avg, T* acc_delta, std::int64_t n,
                     const AdadeltaArgs& a) {
  const AdadeltaRule<T> rule(param, grad, square_avg, acc_delta, a);
#if TINYNET_ISA_LEVEL >= TINYNET_ISA_AVX2
  if constexpr (sizeof(T) == 4) {
    for_each_vector(n, [&](std::int64_t i, Mask m) {
      Vec p = Vec::load(param + i, m), g = Vec::load(grad + i, m), v = Vec::load(square_avg + i, m),
          u = Vec::load(acc_delta + i, m);
      rule.update(p, g, v, u);
      p.store(param + i, m);
      v.store(square_avg + i, m);
      u.store(acc_delta + i, m);
    });
    return;
  }
#endif
  for_each_index(Tag{}, n, rule);
}
