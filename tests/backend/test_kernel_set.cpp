// The CPU backend offers every kernel of backend/kernel_set.hpp, and with_backend() refuses
// a device this build has no kernels for, naming the op (tests/cuda/test_kernel_set.cpp
// checks the CUDA tag, in the emulated and the nvcc builds).
#include <catch2/catch.hpp>
#include <type_traits>

#include "tinynet/backend/bf16_activations.hpp"
#include "tinynet/backend/cpu/batch_norm.hpp"
#include "tinynet/backend/cpu/conv2d.hpp"
#include "tinynet/backend/cpu/dropout.hpp"
#include "tinynet/backend/cpu/elementwise.hpp"
#include "tinynet/backend/cpu/linear.hpp"
#include "tinynet/backend/cpu/loss.hpp"
#include "tinynet/backend/cpu/optimizers.hpp"
#include "tinynet/backend/cpu/pool2d.hpp"
#include "tinynet/backend/cpu/reduce.hpp"
#include "tinynet/backend/cpu/softmax.hpp"
#include "tinynet/backend/cpu/view.hpp"
#include "tinynet/backend/kernel_set.hpp"

using namespace tinynet;

static_assert(backend::KernelSet<backend::cpu::Tag>, "the CPU backend lacks a kernel of backend/kernel_set.hpp");
static_assert(backend::LinearBf16Kernels<backend::cpu::Tag>,
              "the CPU backend lacks a bfloat16 linear kernel of backend/bf16_activations.hpp");
static_assert(backend::Conv2dBf16Kernels<backend::cpu::Tag>,
              "the CPU backend lacks a bfloat16 conv2d kernel of backend/bf16_activations.hpp");

TEST_CASE("with_backend: the CPU tag for the CPU; a CUDA device is refused without CUDA", "[backend]") {
  bool cpu_chosen = false;
  backend::with_backend(Device::cpu(), "op",
                        [&](auto be) { cpu_chosen = std::is_same_v<decltype(be), backend::cpu::Tag>; });
  CHECK(cpu_chosen);
  int calls = 0;
  CHECK_THROWS_AS(backend::with_backend(Device::cuda(0), "my_op", [&](auto) { ++calls; }), TypeError);
  CHECK_THROWS_WITH(backend::with_backend(Device::cuda(1), "my_op", [&](auto) { ++calls; }),
                    Catch::Contains("my_op: cuda:1 requested") && Catch::Contains("compiled without CUDA"));
  CHECK(calls == 0);
}
