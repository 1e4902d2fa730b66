#!/usr/bin/env bash
# Side-by-side CPU benchmark of tinynet and PyTorch on this machine (bench/run.py).
# Extra arguments go to bench/run.py, e.g. --reps 5 --threads 2.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup-debian.sh --bench
# The build users make (default flags: the kernels pick the CPU's vector level at run time)
# and, for comparison, a -march=native one.
cmake --preset release -DTINYNET_BUILD_BENCH=ON
cmake --build --preset release --target train_bench op_bench
cmake --preset release-native
cmake --build --preset release-native --target train_bench
# train_bench fetches MNIST into the data dir when it is missing (MD5-verified). The
# default build also runs capped at each lower vector level (TINYNET_CPU_ISA). --autocast adds
# bfloat16 mixed precision (tinynet-bf16, PyTorch autocast bf16) and its table; on a CPU
# without AVX512-BF16 tinynet's bf16 row still runs (tinynet falls back itself).
python3 bench/run.py --build-dir build/release --native-build-dir build/release-native --levels avx2,baseline \
  --autocast --data-dir "${TINYNET_DATA_DIR:-data}" "$@"
