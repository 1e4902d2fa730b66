#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds the MNIST example in Release and trains it
# with PyTorch's defaults (5 epochs). Extra arguments go to the trainer, e.g.
#   scripts/train-mnist.sh --epochs 1 --threads 2
# The data set is fetched into ./data on first use (MD5-verified).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup-debian.sh
# Only the example: the tests' packages (scripts/run-tests.sh installs them) are not needed.
cmake --preset release -DTINYNET_BUILD_TESTS=OFF -DTINYNET_BUILD_BENCH=OFF
cmake --build --preset release --target mnist
./build/release/examples/mnist/mnist --data-dir data "$@"
