// docs/autograd.md: a new op written the way tinynet's own ops are: a CPU kernel, the
// backward node beside the forward, the public function, and the checks its tests make.
#include <cmath>
#include <cstdio>
#include <tinynet/ops/common.hpp>  // dispatch, the argument checks, new_output
#include <tinynet/tinynet.hpp>

// [kernel]
namespace my_ops {

using tinynet::backend::cpu::Tag;

// y = log(1 + e^x), without overflow for large x.
template <typename T>
void softplus_forward(Tag, const T* x, T* y, std::int64_t n) {
  tinynet::parallel_for(n, tinynet::kElementwiseGrain, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i)
      y[i] = x[i] > T(0) ? x[i] + std::log1p(std::exp(-x[i])) : std::log1p(std::exp(x[i]));
  });
}

// dx = gy * sigmoid(x): writes dx, or adds into it when `accumulate`.
template <typename T>
void softplus_backward(Tag, const T* gy, const T* x, T* dx, std::int64_t n, bool accumulate) {
  tinynet::parallel_for(n, tinynet::kElementwiseGrain, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) {
      const T d = gy[i] / (T(1) + std::exp(-x[i]));
      dx[i] = accumulate ? dx[i] + d : d;
    }
  });
}

}  // namespace my_ops
// [kernel]

// [op]
namespace my_ops {

using namespace tinynet;

// y = softplus(x);  dx = gy * sigmoid(x).  Saves x.
class SoftplusNode final : public autograd::Node {
 public:
  explicit SoftplusNode(Tensor x) : x_(std::move(x)) {}
  const char* name() const override { return "softplus"; }
  void release() override { x_ = Tensor(); }
  void backward(const Tensor& gy) override {
    const autograd::GradSlot dx = input_grad(0);
    ops::detail::dispatch(gy, name(), [&]<typename T>(auto be) {
      softplus_backward(be, gy.data<T>(), x_.data<T>(), dx.grad.data<T>(), gy.numel(), dx.accumulate);
    });
  }

 private:
  Tensor x_;
};

/// log(1 + e^x), elementwise.
inline Tensor softplus(const Tensor& x) {
  ops::detail::check_float_input("softplus", x);
  Tensor y = ops::detail::new_output(x.shape(), x);
  ops::detail::dispatch(x, "softplus",
                        [&]<typename T>(auto be) { softplus_forward(be, x.data<T>(), y.data<T>(), x.numel()); });
  if (autograd::needs_grad(x)) autograd::record(y, std::make_shared<SoftplusNode>(x), {&x});
  return y;
}

}  // namespace my_ops
// [op]

int main() {
  using namespace tinynet;
  manual_seed(1);
  // [checks]
  const Tensor x = uniform({4, 25}, -30.0, 30.0, {.dtype = DType::float64, .requires_grad = true});

  // 1. Forward against an independent reference (long double, the naive formula).
  const Tensor y = my_ops::softplus(x);
  double forward_error = 0;
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const long double ref = std::log1p(std::exp(static_cast<long double>(x.data<double>()[i])));
    forward_error = std::max(forward_error, static_cast<double>(std::fabs(y.data<double>()[i] - ref) / (1 + ref)));
  }

  // 2. Gradient against central finite differences, every element, in float64.
  const GradcheckResult grad = gradcheck([](std::span<const Tensor> in) { return my_ops::softplus(in[0]); }, {x});

  // 3. Backward accumulates: a leaf used twice gets both contributions (2 sigmoid(x)).
  Tensor leaf = x.detach();
  leaf.requires_grad_();
  sum(add(my_ops::softplus(leaf), my_ops::softplus(leaf))).backward();
  double accumulate_error = 0;
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const double expected = 2 / (1 + std::exp(-x.data<double>()[i]));
    accumulate_error = std::max(accumulate_error, std::fabs(leaf.grad().data<double>()[i] - expected));
  }
  // [checks]
  std::printf("forward error %.3g, gradcheck max_rel_error %.3g over %lld elements, accumulate error %.3g\n",
              forward_error, grad.max_rel_error, static_cast<long long>(grad.checked), accumulate_error);
  return forward_error <= 1e-15 && grad.max_rel_error <= 1e-6 && grad.checked == x.numel() && accumulate_error <= 1e-15
             ? 0
             : 1;
}
