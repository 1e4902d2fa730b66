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
# Numbers past a flag's limits, non-finite or too large to convert: refused by name and range.
expect huge_batch "--batch-size: must be a whole number from 1 to 65536, got 9223372036854775807" -- \
  --batch-size 9223372036854775807
expect huge_test_batch "--test-batch-size: must be a whole number from 1 to 65536" -- \
  --test-batch-size 99999999999999999999
expect infinite_lr "--lr: must be a finite number in \(0, 1000\], got inf" -- --lr inf
expect infinite_timeout "--dist-timeout: must be a finite number in \[1, 86400\], got inf" -- --dist-timeout inf
expect huge_timeout "--dist-timeout: .*got 1e10" -- --dist-timeout 1e10
expect many_threads "--threads: must be a whole number from 1 to 1024, got 10000" -- --threads 10000
head -c 1000 /dev/urandom > "$work/garbage.tnet"
expect corrupt_model "garbage.tnet" -- --data-dir "$data" --evaluate "$work/garbage.tnet"
# A torch.save-style archive whose pickle calls os.system: refused by name, never run.
python3 - "$work/evil.pt" "$work/PWNED" <<'PY'
import os, pickle, sys, zipfile
class Evil:
    def __reduce__(self):
        return (os.system, ("touch " + sys.argv[2],))
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("evil/data.pkl", pickle.dumps(Evil(), protocol=2))
    z.writestr("evil/version", "3\n")
PY
expect evil_pytorch "evil.pt.*refuses the global '(os|posix).system'" -- --data-dir "$data" --evaluate "$work/evil.pt"
if [[ -e "$work/PWNED" ]]; then echo "FAIL evil_pytorch: the pickle's command ran"; fail=1; fi
exit $fail
