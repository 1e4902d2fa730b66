// Catch2's runner for the GPU build of the device tests: without a usable GPU it reports
// every test as skipped (exit code 77, CTest's SKIP_RETURN_CODE) instead of failing.

#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>
#include <tinynet/core/cuda/runtime.hpp>

int main(int argc, char** argv) {
  if (!tinynet::cuda::is_available()) {
    std::printf("SKIPPED: no CUDA device on this machine; the device tests ran on the emulated device instead\n");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
