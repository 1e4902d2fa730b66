#!/usr/bin/env bash
# Side-by-side CPU benchmark of tinynet and PyTorch on this machine (bench/run.py).
# Extra arguments go to bench/run.py, e.g. --reps 5 --threads 2.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup-debian.sh --bench
cmake --preset release -DTINYNET_BUILD_BENCH=ON
cmake --build --preset release --target train_bench op_bench
# train_bench fetches MNIST into the data dir when it is missing (MD5-verified).
python3 bench/run.py --build-dir build/release --data-dir "${TINYNET_DATA_DIR:-data}" "$@"
