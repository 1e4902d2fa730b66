#!/usr/bin/env bash
# Bad flags and bad files end with a clear message and a permanent (1-127) exit code,
# never a crash. Usage: bad_input.sh BIN DATA_DIR WORK_DIR
set -uo pipefail
bin=$1 data=$2 work=$3
mkdir -p "$work"
fail=0
expect() {  # expect NAME REGEX -- ARGS...
  local name=$1 regex=$2; shift 3
  "$bin" "$@" > "$work/$name.out" 2>&1
  local rc=$?
  if (( rc < 1 || rc > 127 )) || ! grep -Eq -e "$regex" "$work/$name.out"; then
    echo "FAIL $name: exit $rc, output:"; cat "$work/$name.out"; fail=1
  else
    echo "ok   $name: exit $rc: $(grep -E -e "$regex" "$work/$name.out" | head -n 1)"
  fi
}
expect unknown_flag "--bogus" -- --bogus
expect bad_batch "batch-size" -- --batch-size 0
expect bad_model "model" -- --model resnet
expect bad_dataset "dataset" -- --dataset cifar
expect not_a_number "lr" -- --lr abc
expect resume_without_dir "checkpoint-dir" -- --resume
head -c 1000 /dev/urandom > "$work/garbage.tnet"
expect corrupt_model "garbage.tnet" -- --data-dir "$data" --evaluate "$work/garbage.tnet"
exit $fail
