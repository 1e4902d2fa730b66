// Catch2's main for the GPU build of the device tests, with a listener that, without a
// usable GPU, reports every test as skipped (exit code 77, CTest's SKIP_RETURN_CODE)
// before the first one runs, instead of failing them all.

#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <tinynet/core/cuda/runtime.hpp>

namespace {

struct RequireGpu : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testRunStarting(const Catch::TestRunInfo& info) override {
    if (tinynet::cuda::is_available()) return TestEventListenerBase::testRunStarting(info);
    std::printf("SKIPPED: no CUDA device on this machine; the device tests ran on the emulated device instead\n");
    std::fflush(stdout);
    std::exit(77);
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(RequireGpu)
