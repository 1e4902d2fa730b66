#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds tinynet in Release and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup-debian.sh
# The CUDA toolkit's nvcc, where installed, builds (but without a GPU does not run) the
# CUDA tests and mnist_cuda.
if ! command -v nvcc > /dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export CUDACXX=/usr/local/cuda/bin/nvcc; fi
cmake --preset release
cmake --build --preset release
ctest --preset release -j "$(nproc)"
