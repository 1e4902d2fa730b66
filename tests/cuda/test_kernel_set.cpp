// Both backends offer the same kernels with the same signatures (backend/kernel_set.hpp):
// compiled on the emulated device (g++) and by nvcc. with_backend() picks each device's tag.
#include <catch2/catch.hpp>
#include <type_traits>

#include "device_testing.hpp"
#include "tinynet/backend/kernel_set.hpp"

using namespace tinynet;

static_assert(backend::KernelSet<backend::cpu::Tag>, "the CPU backend lacks a kernel of backend/kernel_set.hpp");
static_assert(backend::KernelSet<backend::cuda::Tag>, "the CUDA backend lacks a kernel of backend/kernel_set.hpp");

TEST_CASE("with_backend: each device gets its backend's tag", "[cuda]") {
  int cpu = 0, cuda = 0;
  const auto count = [&](auto be) {
    if constexpr (std::is_same_v<decltype(be), backend::cuda::Tag>)
      ++cuda;
    else if constexpr (std::is_same_v<decltype(be), backend::cpu::Tag>)
      ++cpu;
  };
  backend::with_backend(Device::cpu(), "op", count);
  backend::with_backend(testing::kCuda, "op", count);
  CHECK(cpu == 1);
  CHECK(cuda == 1);
}
