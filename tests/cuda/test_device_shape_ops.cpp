// The views that copy (narrow, select, permute, transpose), cat, stack and index_select on
// the device against the CPU backend: values and gradients. Built twice: by g++ on the
// emulated device and by nvcc.

#include "device_testing.hpp"

using namespace tinynet;
using namespace tinynet::testing;
using Inputs = std::span<const Tensor>;

TEST_CASE("narrow, select, permute, transpose, unsqueeze match the CPU", "[cuda]") {
  const Tensor a = input32({4, 3, 5}, 1);
  check_same_on_device([](Inputs x) { return x[0].permute({2, 0, 1}); }, {a});
  check_same_on_device([](Inputs x) { return x[0].transpose(0, 2); }, {a});
  check_same_on_device([](Inputs x) { return x[0].narrow(2, 1, 3); }, {a});
  check_same_on_device([](Inputs x) { return x[0].narrow(0, -2, 2); }, {a});
  check_same_on_device([](Inputs x) { return x[0].select(1, 2); }, {a});
  check_same_on_device([](Inputs x) { return x[0].unsqueeze(1).squeeze(1) * 2.0; }, {a});
  const Tensor labels = tensor<std::int64_t>({5, 6, 7, 8}).view({2, 2});
  CHECK(all_values(labels.to(kCuda).transpose(0, 1)) == std::vector<double>{5, 7, 6, 8});
  CHECK(all_values(labels.to(kCuda).select(1, 0)) == std::vector<double>{5, 7});
}

TEST_CASE("cat, stack and index_select match the CPU", "[cuda]") {
  const Tensor a = input32({2, 3, 4}, 2), b = input32({2, 1, 4}, 3), c = input32({2, 3, 4}, 4);
  check_same_on_device([](Inputs x) { return cat(x, 1); }, {a, b, c});
  check_same_on_device([](Inputs x) { return cat({x[0], x[1]}, -1); }, {a, c});
  check_same_on_device([](Inputs x) { return stack(x, 1); }, {a, c});
  const Tensor index = tensor<std::int64_t>({2, 0, 2, 1});
  for (int dim = 0; dim < 3; ++dim) {
    INFO("dim " << dim);
    check_same_on_device(
        [&](Inputs x) { return index_select(x[0], dim, x[0].device().is_cpu() ? index : index.to(kCuda)); },
        {input32({3, 3, 4}, 5)});
  }
  const Tensor m = tensor<bool>({true, false}), n = tensor<bool>({false, false});
  CHECK(all_values(cat({m.to(kCuda), n.to(kCuda)})) == std::vector<double>{1, 0, 0, 0});
}

TEST_CASE("index_select reports an out-of-range index on the device", "[cuda]") {
  const Tensor x = input32({3, 4}, 5, false).to(kCuda);
  CHECK_THROWS_AS(index_select(x, 0, tensor<std::int64_t>({0, 3}).to(kCuda)).to(Device::cpu()), IndexError);
  CHECK_THROWS_WITH(index_select(x, 0, tensor<std::int64_t>({-1}).to(kCuda)).to(Device::cpu()),
                    Catch::Contains("index_select"));
  // The error is reported once; the next select is fine.
  CHECK(index_select(x, 1, tensor<std::int64_t>({3}).to(kCuda)).to(Device::cpu()).numel() == 3);
  CHECK_THROWS_WITH(cat({x, x.to(Device::cpu())}),
                    Catch::Contains("cat: tensor 1 is on cpu but tensor 0 is on cuda:0"));
}

TEST_CASE("arange, full and the _like creators make the CPU's values on the device", "[cuda]") {
  const Tensor r = arange(0.5, 3.0, 0.25, {.dtype = DType::float64, .device = kCuda});
  REQUIRE(r.device() == kCuda);
  CHECK(all_values(r) == all_values(arange(0.5, 3.0, 0.25, {.dtype = DType::float64})));
  const Tensor i = arange(0, 7, 1, {.dtype = DType::int64, .device = kCuda});
  CHECK(all_values(i) == all_values(arange(7)));
  const Tensor x = input32({2, 3}, 6, false).to(kCuda);
  for (const Tensor& t : {zeros_like(x), ones_like(x), full_like(x, -2.5), full({2, 3}, -2.5, {.device = kCuda})}) {
    REQUIRE(t.device() == kCuda);
    CHECK(t.dtype() == DType::float32);
    CHECK(t.shape() == Shape{2, 3});
  }
  CHECK(all_values(full_like(x, -2.5)) == std::vector<double>(6, -2.5));
  CHECK(all_values(ones_like(x)) == std::vector<double>(6, 1.0));
  CHECK(all_values(zeros_like(x, {.dtype = DType::int64, .device = kCuda})) == std::vector<double>(6, 0.0));
}
