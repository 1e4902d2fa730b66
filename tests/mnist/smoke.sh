#!/usr/bin/env bash
# Short real-data run of the MNIST example: the logged loss must fall and the test
# accuracy must beat 90%. Usage: smoke.sh MNIST_BINARY DATA_DIR WORK_DIR [BATCHES]
# (300 by default; the loss is logged 6 or 7 times along them).
set -euo pipefail
bin=$1 data=$2 work=$3 batches=${4:-300}
mkdir -p "$work"
"$bin" --data-dir "$data" --epochs 1 --limit-train-batches "$batches" --log-interval $((batches / 6)) --threads 2 \
  > "$work/smoke.log"
cat "$work/smoke.log"
awk '
  /^Epoch: 1 \(/ { loss[n++] = $NF }
  /^accuracy=/   { split($0, kv, "="); acc = kv[2] }
  END {
    if (n < 6) { print "FAIL: expected 6 loss lines, got " n; exit 1 }
    if (!(loss[n-1] < loss[0] / 4)) { print "FAIL: loss did not fall: " loss[0] " -> " loss[n-1]; exit 1 }
    if (!(acc > 0.90)) { print "FAIL: test accuracy " acc " is not above 0.90"; exit 1 }
    print "OK: loss " loss[0] " -> " loss[n-1] ", accuracy " acc
  }' "$work/smoke.log"
