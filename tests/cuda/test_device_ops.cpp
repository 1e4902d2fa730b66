// Every op on the device against the CPU backend: forward values and gradients to 1e-5 in
// float32, float64 gradchecks run on the device, and the same dropout masks.
// Built twice: by g++ on the emulated device (CPU-only CI) and by nvcc for a real GPU.

#include <tinynet/data/dataloader.hpp>

#include "device_testing.hpp"

using namespace tinynet;
using namespace tinynet::testing;
using Inputs = std::span<const Tensor>;

TEST_CASE("tensors move to the device and back unchanged", "[cuda]") {
  const Tensor a = input32({3, 5}, 1, false);
  const Tensor d = a.to(kCuda);
  CHECK(d.device() == kCuda);
  CHECK(values(d.to(Device::cpu())) == values(a));
  const Tensor copy = d.clone();
  CHECK(copy.device() == kCuda);
  CHECK_FALSE(copy.shares_storage(d));
  CHECK(values(host(copy)) == values(a));
  const Tensor f64 = d.to(DType::float64);
  CHECK(f64.device() == kCuda);
  check_close(host(f64), values(a), 0);
  Tensor z = zeros({4}, {.device = kCuda});
  z.fill_(2.5);
  CHECK(values(host(z)) == std::vector<double>(4, 2.5));
  CHECK(full({1}, 7.0, {.dtype = DType::int64, .device = kCuda}).item<std::int64_t>() == 7);
}

TEST_CASE("elementwise ops and broadcasting match the CPU", "[cuda]") {
  const Tensor a = input32({4, 3, 5}, 1), b = input32({4, 3, 5}, 2), row = input32({5}, 3), col = input32({3, 1}, 4);
  const Tensor pos = uniform({4, 3, 5}, 0.5, 2.0, {.requires_grad = true});
  check_same_on_device([](Inputs x) { return x[0] + x[1]; }, {a, b});
  check_same_on_device([](Inputs x) { return x[0] - x[1]; }, {a, row});
  check_same_on_device([](Inputs x) { return x[0] * x[1]; }, {a, col});
  check_same_on_device([](Inputs x) { return x[0] / x[1]; }, {row, pos});
  check_same_on_device([](Inputs x) { return x[0] * 3.0 + 1.5; }, {a});
  check_same_on_device([](Inputs x) { return -x[0]; }, {a});
  check_same_on_device([](Inputs x) { return relu(x[0]); }, {a});
  check_same_on_device([](Inputs x) { return add_relu(x[0], x[1]); }, {a, b});
  check_same_on_device([](Inputs x) { return sigmoid(x[0]); }, {a});
  check_same_on_device([](Inputs x) { return tanh(x[0]); }, {a});
  check_same_on_device([](Inputs x) { return exp(x[0]); }, {a});
  check_same_on_device([](Inputs x) { return log(x[0]); }, {pos});
  check_same_on_device([](Inputs x) { return pow(x[0], 3.0); }, {pos});
  check_same_on_device([](Inputs x) { return x[0].view({12, 5}).flatten(); }, {a});
}

TEST_CASE("reductions and argmax match the CPU", "[cuda]") {
  const Tensor a = input32({4, 6, 5}, 5);
  check_same_on_device([](Inputs x) { return sum(x[0]); }, {a});
  check_same_on_device([](Inputs x) { return mean(x[0]); }, {a});
  for (int dim = 0; dim < 3; ++dim) {
    INFO("dim " << dim);
    check_same_on_device([dim](Inputs x) { return sum(x[0], dim); }, {a});
    check_same_on_device([dim](Inputs x) { return mean(x[0], dim, true); }, {a});
    const Tensor idx = argmax(a.to(kCuda), dim);
    CHECK(idx.dtype() == DType::int64);
    CHECK(values(host(idx).to(DType::float64)) == values(argmax(a, dim).to(DType::float64)));
  }
}

TEST_CASE("linear and matmul match the CPU", "[cuda]") {
  const Tensor x = input32({7, 13}, 6), w = input32({5, 13}, 7), b = input32({5}, 8), m = input32({13, 4}, 9);
  check_same_on_device([](Inputs t) { return linear(t[0], t[1], t[2]); }, {x, w, b});
  check_same_on_device([](Inputs t) { return linear(t[0], t[1]); }, {x, w});
  check_same_on_device([](Inputs t) { return matmul(t[0], t[1]); }, {x, m});
}

TEST_CASE("conv2d matches the CPU for strides, padding and odd sizes", "[cuda]") {
  const Tensor w = input32({4, 3, 3, 3}, 11), b = input32({4}, 12);
  for (const auto& [stride, padding] : {std::pair{1, 0}, std::pair{1, 1}, std::pair{2, 1}, std::pair{2, 0}}) {
    INFO("stride " << stride << " padding " << padding);
    const Tensor x = input32({3, 3, 9, 7}, 10);
    check_same_on_device([=](Inputs t) { return conv2d(t[0], t[1], t[2], stride, padding); }, {x, w, b});
    check_same_on_device([=](Inputs t) { return conv2d(t[0], t[1], Tensor(), stride, padding); }, {x, w});
  }
  // The example network's shapes, 1 -> 32 -> 64 channels on 28x28: the weight gradients
  // are sums of thousands of terms, compared with non-negative data (see Weights).
  check_same_on_device(
      [](Inputs t) { return conv2d(t[0], t[1], t[2]); },
      {input32({8, 1, 28, 28}, 13, true, 0, 1), input32({32, 1, 3, 3}, 14, true, 0, 1), input32({32}, 15, true, 0, 1)},
      kDeviceTolerance, Weights::positive);
  check_same_on_device([](Inputs t) { return conv2d(t[0], t[1], t[2]); },
                       {input32({4, 32, 26, 26}, 16, true, 0, 1), input32({64, 32, 3, 3}, 17, true, 0, 1),
                        input32({64}, 18, true, 0, 1)},
                       kDeviceTolerance, Weights::positive);
}

TEST_CASE("pooling matches the CPU, overlapping windows included", "[cuda]") {
  const Tensor x = distinct_values({2, 3, 9, 8}, 20).to(DType::float32).requires_grad_();
  check_same_on_device([](Inputs t) { return max_pool2d(t[0], 2); }, {x});
  check_same_on_device([](Inputs t) { return max_pool2d(t[0], 3, 2, 1); }, {x});
  check_same_on_device([](Inputs t) { return avg_pool2d(t[0], 2); }, {x});
  check_same_on_device([](Inputs t) { return avg_pool2d(t[0], 3, 2, 1); }, {x});
}

TEST_CASE("softmax, log_softmax, nll_loss and cross_entropy match the CPU", "[cuda]") {
  const Tensor x = input32({6, 10}, 21), x3 = input32({2, 4, 3}, 22);
  const Tensor target = tensor<std::int64_t>({1, 0, 9, 3, 3, 7});
  check_same_on_device([](Inputs t) { return softmax(t[0], 1); }, {x});
  check_same_on_device([](Inputs t) { return log_softmax(t[0], 0); }, {x});
  check_same_on_device([](Inputs t) { return log_softmax(t[0], 1); }, {x3});
  for (const Reduction r : {Reduction::none, Reduction::mean, Reduction::sum}) {
    INFO("reduction " << static_cast<int>(r));
    check_same_on_device(
        [&](Inputs t) { return nll_loss(log_softmax(t[0], 1), t[0].device().is_cpu() ? target : target.to(kCuda), r); },
        {x});
  }
  check_same_on_device(
      [&](Inputs t) { return cross_entropy(t[0], t[0].device().is_cpu() ? target : target.to(kCuda)); }, {x});
}

TEST_CASE("nll_loss reports an out-of-range target on the device", "[cuda]") {
  const Tensor logp = log_softmax(input32({3, 4}, 23, false), 1).to(kCuda);
  const Tensor bad = tensor<std::int64_t>({0, 4, 1}).to(kCuda);
  CHECK_THROWS_AS(nll_loss(logp, bad).item(), IndexError);
  // The error is reported once; the next loss is fine.
  const Tensor good = tensor<std::int64_t>({0, 3, 1}).to(kCuda);
  CHECK(std::isfinite(nll_loss(logp, good).item()));
  CHECK_THROWS_AS(nll_loss(logp, tensor<std::int64_t>({0, 1, 2})), TypeError);
}

TEST_CASE("batch_norm and batch_norm_relu match the CPU in training and evaluation, running statistics included",
          "[cuda]") {
  for (const bool training : {true, false}) {
    for (const bool fused : {false, true}) {
      INFO("training " << training << (fused ? ", batch_norm_relu" : ""));
      const Tensor x = input32({4, 3, 5, 6}, 24), w = input32({3}, 25), b = input32({3}, 26);
      Tensor rm = input32({3}, 27, false), rv = uniform({3}, 0.5, 1.5);
      Tensor rm_d = rm.to(kCuda), rv_d = rv.to(kCuda);
      check_same_on_device(
          [&](Inputs t) {
            const bool cpu = t[0].device().is_cpu();
            const auto op = fused ? batch_norm_relu : batch_norm;
            return op(t[0], cpu ? rm : rm_d, cpu ? rv : rv_d, t[1], t[2], training, 0.1, 1e-5);
          },
          {x, w, b});
      check_close(host(rm_d), values(rm), kDeviceTolerance);
      check_close(host(rv_d), values(rv), kDeviceTolerance);
    }
  }
}

TEST_CASE("batch_norm_relu and add_relu on the device: the same bits as the two ops there", "[cuda]") {
  // Values and every gradient, fused against unfused, both on the device; x also feeds a
  // second term, so that the fused op's input gradient is added to another.
  const auto run = [](bool fused, bool residual) {
    const Tensor x = on_device(input32({4, 3, 5, 6}, 32)), w = on_device(input32({3}, 33));
    const Tensor b = on_device(input32({3}, 34)), z = on_device(input32({4, 3, 5, 6}, 35));
    const Tensor y = residual ? (fused ? add_relu(x, z) : relu(add(x, z)))
                              : (fused ? batch_norm_relu(x, Tensor(), Tensor(), w, b)
                                       : relu(batch_norm(x, Tensor(), Tensor(), w, b)));
    CHECK(y.grad_fn()->name() == std::string(fused ? (residual ? "add_relu" : "batch_norm_relu") : "relu"));
    add(sum(mul(y, on_device(input32({4, 3, 5, 6}, 36, false)))), sum(mul(x, x))).backward();
    std::vector<std::vector<double>> out{values(host(y)), values(host(x.grad()))};
    for (const Tensor& t : {w, b, z})
      if (t.grad().defined()) out.push_back(values(host(t.grad())));
    return out;
  };
  for (bool residual : {false, true}) {
    INFO((residual ? "add_relu" : "batch_norm_relu"));
    CHECK(run(true, residual) == run(false, residual));
  }
}

TEST_CASE("dropout draws the same masks on the device as on the CPU", "[cuda]") {
  const Tensor x = input32({64, 32, 5, 5}, 30, false);
  Generator g_cpu(7), g_dev(7);
  const Tensor y = dropout(x, 0.3, true, g_cpu);
  const Tensor yd = dropout(x.to(kCuda), 0.3, true, g_dev);
  CHECK(values(host(yd)) == values(y));
  const Tensor y2 = dropout2d(x, 0.5, true, g_cpu);
  const Tensor y2d = dropout2d(x.to(kCuda), 0.5, true, g_dev);
  CHECK(values(host(y2d)) == values(y2));
  check_same_on_device(
      [](Inputs t) {
        Generator g(3);
        return dropout(t[0], 0.5, true, g);
      },
      {input32({10, 7}, 31)});
}

TEST_CASE("float64 gradchecks pass on the device", "[cuda]") {
  check_gradients([](Inputs t) { return conv2d(t[0], t[1], t[2], 2, 1); },
                  {on_device(random_input({2, 2, 5, 6}, 40)), on_device(random_input({3, 2, 3, 3}, 41)),
                   on_device(random_input({3}, 42))});
  check_gradients(
      [](Inputs t) { return linear(t[0], t[1], t[2]); },
      {on_device(random_input({3, 4}, 43)), on_device(random_input({2, 4}, 44)), on_device(random_input({2}, 45))});
  check_gradients([](Inputs t) { return max_pool2d(t[0], 3, 2, 1); }, {on_device(distinct_values({1, 2, 5, 5}, 46))});
  check_gradients([](Inputs t) { return avg_pool2d(t[0], 3, 2, 1); }, {on_device(random_input({1, 2, 5, 5}, 47))});
  check_gradients(
      [](Inputs t) {
        return nll_loss(log_softmax(t[0], 1), tensor<std::int64_t>({2, 0, 1}).to(kCuda));
      },
      {on_device(random_input({3, 4}, 48))});
  check_gradients(
      [](Inputs t) { return batch_norm(t[0], Tensor(), Tensor(), t[1], t[2]); },
      {on_device(random_input({3, 2, 2, 2}, 49)), on_device(random_input({2}, 50)), on_device(random_input({2}, 51))});
  check_gradients(
      [](Inputs t) { return batch_norm_relu(t[0], Tensor(), Tensor(), t[1], t[2]); },
      {on_device(random_input({3, 2, 2, 2}, 49)), on_device(random_input({2}, 50)), on_device(random_input({2}, 51))});
  check_gradients([](Inputs t) { return sigmoid(t[0]) * t[1] / (tanh(t[0]) + 2.0); },
                  {on_device(random_input({2, 3}, 52)), on_device(random_input({3}, 53))});
}

TEST_CASE("ops refuse to mix devices", "[cuda]") {
  const Tensor a = input32({2, 3}, 60, false);
  CHECK_THROWS_AS(a + a.to(kCuda), TypeError);
  CHECK_THROWS_AS(linear(a.to(kCuda), input32({4, 3}, 61, false)), TypeError);
  CHECK_THROWS_AS(Device::cuda(1).str() == "" ? Tensor() : zeros({1}, {.device = Device::cuda(1)}), Error);
}

TEST_CASE("pinned host memory uploads the same values, and the DataLoader pins batches on request", "[cuda]") {
  const Tensor a = input32({64, 1, 28, 28}, 90, false);
  const Tensor pinned = a.pin_memory();
  CHECK(pinned.is_pinned());
  CHECK_FALSE(a.is_pinned());
  CHECK(pinned.pin_memory().is_same(pinned));
  CHECK(values(pinned) == values(a));
  CHECK(values(host(pinned.to(kCuda))) == values(a));
  CHECK_THROWS_AS(a.to(kCuda).pin_memory(), TypeError);

  data::TensorDataset ds(a, from_vector<std::int64_t>(std::vector<std::int64_t>(64, 3), {64}));
  data::DataLoader loader(ds, {.batch_size = 16, .pin_memory = true});
  const std::vector<double> all = values(a);
  const std::size_t per_batch = 16 * 28 * 28;
  std::size_t k = 0;
  for (auto& batch : loader) {
    CHECK(batch.data.is_pinned());
    CHECK(batch.target.is_pinned());
    const std::vector<double> expected(all.begin() + static_cast<std::ptrdiff_t>(k * per_batch),
                                       all.begin() + static_cast<std::ptrdiff_t>((k + 1) * per_batch));
    CHECK(values(host(batch.data.to(kCuda))) == expected);
    ++k;
  }
  CHECK(k == 4);
}
