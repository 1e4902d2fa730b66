#!/usr/bin/env bash
# Same seed and thread count -> identical stdout, run to run; a saved model evaluates to
# the same test accuracy the training run printed; a run stopped after epoch 1 and
# restarted with --resume prints what the uninterrupted run printed for epoch 2. Usage: determinism.sh BIN DATA_DIR WORK_DIR
set -euo pipefail
bin=$1 data=$2 work=$3
mkdir -p "$work"
args=(--data-dir "$data" --limit-train-batches 40 --log-interval 10 --threads 2 --seed 7)
"$bin" "${args[@]}" --epochs 2 --save-model --model-path "$work/model.tnet" > "$work/a.log"
"$bin" "${args[@]}" --epochs 2 > "$work/b.log"
diff "$work/a.log" "$work/b.log" || { echo "FAIL: two runs with the same seed differ"; exit 1; }
"$bin" --data-dir "$data" --threads 2 --evaluate "$work/model.tnet" > "$work/eval.log"
expected=$(grep '^Test accuracy' "$work/a.log" | tail -n 1)
actual=$(grep '^Test accuracy' "$work/eval.log")
[[ "$expected" == "$actual" ]] || { echo "FAIL: evaluate printed '$actual', training ended with '$expected'"; exit 1; }
"$bin" --data-dir "$data" --threads 2 --seed 8 --epochs 1 --limit-train-batches 20 > "$work/c.log"
if diff -q "$work/a.log" "$work/c.log" > /dev/null; then echo "FAIL: a different seed gave the same log"; exit 1; fi
# Stop after epoch 1, restart with --resume: the epoch-2 lines match the uninterrupted run.
rm -rf "$work/ckpt"
"$bin" "${args[@]}" --epochs 1 --checkpoint-dir "$work/ckpt" > "$work/r1.log"
"$bin" "${args[@]}" --epochs 2 --checkpoint-dir "$work/ckpt" --resume > "$work/r2.log"
diff <(grep -v '^Epoch: 1 ' "$work/a.log" | sed -n '/^Epoch: 2 /,$p') "$work/r2.log" ||
  { echo "FAIL: the resumed epoch 2 differs from the uninterrupted run"; exit 1; }
echo "OK: identical logs, evaluate reproduces '$expected', --resume continues the same run"
