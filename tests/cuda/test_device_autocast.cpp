// autocast on the device: conv2d, linear and matmul of float32 device tensors multiply
// bfloat16-rounded operands with float32 sums (cuBLAS's bfloat16 GEMM on a GPU, rounded
// copies for the CPU GEMM on the emulated device), forward and backward. Each result is
// within gamma_K * sum |a b| of the float64 result on the rounded operands, K the terms
// per sum (the bound and why: tests/ops/test_autocast.cpp).
#include <cstring>

#include "device_testing.hpp"
#include "tinynet/backend/bf16_activations.hpp"

using namespace tinynet;
using namespace tinynet::testing;

// Named, not anonymous: the area's test files may be compiled as one translation unit.
namespace device_autocast {

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

double gamma32(std::int64_t k) { return static_cast<double>(k) * 0x1p-24 / (1 - static_cast<double>(k) * 0x1p-24); }

/// t on the host in float64, rounded to bfloat16 (and made non-negative with `absolute`),
/// a leaf that requires grad.
Tensor rounded64(const Tensor& t, bool absolute, bool requires_grad = true) {
  Tensor r = host(t).detach().to(DType::bfloat16).to(DType::float64);
  if (absolute)
    for (std::int64_t i = 0; i < r.numel(); ++i) r.data<double>()[i] = std::fabs(r.data<double>()[i]);
  if (requires_grad) r.requires_grad_();
  return r;
}

/// got within gamma32(k) * mag of want, elementwise; a bfloat16 `got` (conv2d's output)
/// within that plus its own rounding, 2^-8 of the computed value (at most |want| + that).
void check_bound(const Tensor& got, const Tensor& want, const Tensor& mag, std::int64_t k) {
  const std::vector<double> g = values(host(got).to(DType::float64)), w = values(want), m = values(mag);
  REQUIRE(g.size() == w.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    double bound = gamma32(k) * m[i];
    if (got.dtype() == DType::bfloat16) bound += 0x1p-8 * (std::fabs(w[i]) + bound);
    INFO("element " << i << ": got " << g[i] << ", want " << w[i]);
    REQUIRE(std::fabs(g[i] - w[i]) <= bound);
  }
}

/// f under autocast on device copies of `inputs` (float32, requiring grad) against f in
/// float64 on their rounded values: the output (of type `out_dtype`, sums of k_out terms)
/// and each input's gradient of sum(out * v) (k_grad[i] terms).
void check_autocast(const std::function<Tensor(std::span<const Tensor>)>& f, const std::vector<Tensor>& inputs,
                    DType out_dtype, std::int64_t k_out, const std::vector<std::int64_t>& k_grad) {
  std::vector<Tensor> dev, ref, mag;
  for (const Tensor& t : inputs) {
    dev.push_back(on_device(t));
    ref.push_back(rounded64(t, false));
    mag.push_back(rounded64(t, true));
  }
  Tensor out;
  {
    autocast scope(DeviceType::cuda, DType::bfloat16);
    out = f(dev);
  }
  REQUIRE(out.device() == kCuda);
  REQUIRE(out.dtype() == out_dtype);
  const Tensor v = input32(out.shape(), 77, false);
  out.backward(v.to(out_dtype).to(kCuda));  // (rounded64 rounds it as a bfloat16 seed is)
  const Tensor out_ref = f(ref), out_mag = f(mag);
  out_ref.backward(rounded64(v, false, false));
  out_mag.backward(rounded64(v, true, false));
  {
    INFO("forward");
    check_bound(out, out_ref, out_mag, k_out);
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    INFO("gradient of input " << i);
    check_bound(dev[i].grad(), ref[i].grad(), mag[i].grad(), k_grad[i]);
  }
}

}  // namespace device_autocast

TEST_CASE("autocast on the device: linear, matmul and conv2d multiply in bfloat16", "[cuda][autocast]") {
  using device_autocast::check_autocast;
  const auto lin = [](std::span<const Tensor> in) { return linear(in[0], in[1]); };
  check_autocast(lin, {input32({6, 70}, 1), input32({9, 70}, 2)}, DType::float32, 70, {9, 6});
  const auto mm = [](std::span<const Tensor> in) { return matmul(in[0], in[1]); };
  check_autocast(mm, {input32({5, 33}, 3), input32({33, 8}, 4)}, DType::float32, 33, {8, 5});
  const auto conv = [](std::span<const Tensor> in) { return conv2d(in[0], in[1], Tensor(), 1, 1); };
  // 3 x 3 x 4 terms per output; 3 x 3 x 5 per input gradient; 2 x 7 x 6 per weight gradient.
  // Its output is bfloat16, as PyTorch's autocast returns it.
  check_autocast(conv, {input32({2, 4, 7, 6}, 5), input32({5, 4, 3, 3}, 6)}, DType::bfloat16, 36, {45, 84});
}

// The device backend has no product kernels over bfloat16 activations, so autocast's query
// (backend::takes_bf16) answers no for it by construction and linear and conv2d cast a
// bfloat16 input: their values and gradients are exactly those of the explicit casts.
static_assert(!backend::LinearBf16Kernels<backend::cuda::Tag>);
static_assert(!backend::Conv2dBf16Kernels<backend::cuda::Tag>);

TEST_CASE("autocast on the device: bfloat16 activations take the cast path of the bfloat16 query", "[cuda][autocast]") {
  const auto conv = [](const Tensor& x, const Tensor& w, const Tensor& b) { return conv2d_relu(x, w, b, 1, 0); };
  const auto lin = [](const Tensor& x, const Tensor& w, const Tensor& b) { return linear(x, w, b); };
  struct Case {
    std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)> op;
    Shape x, w, b;
  };
  const std::vector<Case> cases = {{conv, {2, 4, 8, 8}, {6, 4, 3, 3}, {6}}, {lin, {5, 12}, {7, 12}, {7}}};
  for (std::size_t c = 0; c < cases.size(); ++c) {
    INFO("case " << c);
    const Case& k = cases[c];
    const Tensor x32 = input32(k.x, 11 + c), w32 = input32(k.w, 21 + c), b32 = input32(k.b, 31 + c);
    if (k.x.rank() == 4)
      CHECK_FALSE(
          backend::takes_bf16(kCuda, backend::Conv2dBf16{ops::detail::conv2d_geometry(x32, w32, {1, 0}), true}));
    else
      CHECK_FALSE(backend::takes_bf16(kCuda, backend::LinearBf16{k.x[1]}));
    // The op on a bfloat16 input (a float32 leaf cast), and the explicit casts, each with
    // its own leaves.
    std::vector<Tensor> grads[2];
    Tensor outs[2];
    for (int explicit_casts = 0; explicit_casts < 2; ++explicit_casts) {
      const Tensor xi = on_device(x32), w = on_device(w32), b = on_device(b32);
      {
        autocast scope(DeviceType::cuda, DType::bfloat16);
        const Tensor x = cast(xi, DType::bfloat16);
        outs[explicit_casts] =
            explicit_casts ? cast(k.op(cast(x, DType::float32), w, b), DType::bfloat16) : k.op(x, w, b);
      }
      outs[explicit_casts].backward(cast(input32(outs[explicit_casts].shape(), 41, false), DType::bfloat16).to(kCuda));
      grads[explicit_casts] = {host(xi.grad()), host(w.grad()), host(b.grad())};
    }
    REQUIRE(outs[0].dtype() == DType::bfloat16);
    CHECK(device_autocast::same_bits(host(outs[0]), host(outs[1])));
    for (int i = 0; i < 3; ++i) {
      INFO("gradient " << i);
      CHECK(device_autocast::same_bits(grads[0][i], grads[1][i]));
    }
  }
}
