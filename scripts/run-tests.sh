#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds tinynet in Release and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup-debian.sh
cmake --preset release
cmake --build --preset release
ctest --preset release -j "$(nproc)"
