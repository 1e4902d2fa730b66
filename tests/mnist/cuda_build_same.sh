#!/usr/bin/env bash
# The nvcc build of the MNIST example trains on the CPU (--no-cuda) exactly as the g++ build
# does: the same vector level (its kernels from tinynet::cpu_kernels) and the same log, line
# for line (the start-up line naming the level included), in float32 and under autocast;
# only the timings differ.
# Usage: cuda_build_same.sh MNIST MNIST_CUDA DATA_DIR WORK_DIR
set -euo pipefail
cpu=$1 cuda=$2 data=$3 work=$4
mkdir -p "$work"
status=0
for autocast in off bf16; do
  for bin in "$cpu" "$cuda"; do
    "$bin" --no-cuda --data-dir "$data" --epochs 1 --limit-train-batches 20 --log-interval 5 --threads 2 \
      --no-progress --autocast "$autocast" 2>&1 | sed -E -e '/ trained in /d' -e 's/ in [0-9.]+ s$//' \
      > "$work/$(basename "$bin")-$autocast.log"
  done
  head -1 "$work/$(basename "$cuda")-$autocast.log"
  if ! diff "$work/$(basename "$cpu")-$autocast.log" "$work/$(basename "$cuda")-$autocast.log"; then
    echo "FAIL: --autocast $autocast: the nvcc build's log differs from the g++ build's (above)"
    status=1
  fi
done
((status == 0)) && echo "OK: the same logs in float32 and bf16"
exit $status
