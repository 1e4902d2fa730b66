#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds tinynet in Release and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup-debian.sh --tests
# torchrun 2.6 for the launch tests against the torchrun users install today: a Debian 13
# chroot, made once and cached (81 s and 1.3 GB on disk here). Without it those tests are
# reported skipped, saying why.
bash scripts/make-trixie-chroot.sh > /dev/null || echo "run-tests: no trixie chroot; the torchrun 2.6 tests will be skipped"
# The CUDA toolkit's nvcc, where installed, builds (but without a GPU does not run) the
# CUDA tests and mnist_cuda.
if ! command -v nvcc > /dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export CUDACXX=/usr/local/cuda/bin/nvcc; fi
cmake --preset release -DTINYNET_BUILD_TESTS=ON
cmake --build --preset release
ctest --preset release -j "$(nproc)"
# AddressSanitizer + UBSan over the unit tests, ThreadSanitizer over the threaded parts.
bash scripts/run-sanitizers.sh
