#!/usr/bin/env bash
# Data and checkpoint files that cannot be used end the run with the documented exit code
# and a message saying what happened: a data file with the wrong MD5 in a read-only data
# directory (3: the data set cannot be obtained; root with unshare --mount only, else
# not run), and a checkpoint written with another optimizer (4: it does not fit the run).
# Usage: file_errors.sh BIN DATA_DIR WORK_DIR
set -uo pipefail
bin=$1 data=$2 work=$3
rm -rf "$work" && mkdir -p "$work/data/mnist"
fail=0
check() {  # check NAME EXPECTED_RC RC OUTPUT REGEX...
  local name=$1 want=$2 rc=$3 out=$4; shift 4
  local ok=1
  (( rc == want )) || ok=0
  for regex in "$@"; do grep -Eq -e "$regex" "$out" || { ok=0; echo "missing: $regex"; }; done
  if (( ok )); then
    echo "ok   $name: exit $rc: $(grep -E -e "$1" "$out" | head -n 1)"
  else
    echo "FAIL $name: exit $rc (expected $want), output:"; cat "$out"; fail=1
  fi
}

# One label changed in the test labels: a well-formed file that only its MD5 tells apart.
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte; do
  ln -s "$data/mnist/$f.gz" "$work/data/mnist/$f.gz"
done
gunzip -c "$data/mnist/t10k-labels-idx1-ubyte.gz" > "$work/data/mnist/t10k-labels-idx1-ubyte"
printf '\x05' | dd of="$work/data/mnist/t10k-labels-idx1-ubyte" bs=1 seek=8 conv=notrunc status=none
bad=$work/data/mnist/t10k-labels-idx1-ubyte
if [[ $(id -u) == 0 ]] && unshare --mount true 2> /dev/null; then
  unshare --mount bash -c 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"' _ \
    "$work/data" timeout 60 "$bin" --data-dir "$work/data" --epochs 1 --limit-train-batches 1 --threads 1 \
    > "$work/md5_read_only.out" 2>&1
  check md5_read_only 3 $? "$work/md5_read_only.out" \
    "MNIST: present file '$bad': MD5 mismatch: expected 27ae3e4e09519cfbb04c329615203637, got [0-9a-f]{32}: not used" \
    "error: MNIST: cannot fetch t10k-labels-idx1-ubyte \(present with the wrong MD5\) into '$work/data/mnist': the folder is not writable \(Read-only file system\)" \
    "Copy good files \(raw or .gz\) into '$work/data/mnist'"
  if [[ ! -f "$bad" ]] || ls -A "$work/data/mnist" | grep -q '^\.'; then
    echo "FAIL md5_read_only: the data directory changed:"; ls -la "$work/data/mnist"; fail=1
  fi
else
  echo "not run: the read-only data directory case (it needs root and unshare --mount)"
fi
rm "$bad"
ln -s "$data/mnist/t10k-labels-idx1-ubyte.gz" "$work/data/mnist/t10k-labels-idx1-ubyte.gz"

# A checkpoint of Adadelta's state resumed with --optimizer sgd: it does not fit (4).
common=(--data-dir "$work/data" --limit-train-batches 2 --threads 1 --checkpoint-dir "$work/ckpt")
timeout 60 "$bin" "${common[@]}" --epochs 1 > "$work/adadelta.out" 2>&1 || { cat "$work/adadelta.out"; fail=1; }
timeout 60 "$bin" "${common[@]}" --epochs 2 --resume --optimizer sgd > "$work/sgd.out" 2>&1
check resume_other_optimizer 4 $? "$work/sgd.out" \
  "error: --resume: '$work/ckpt/checkpoint.tnet' does not fit this run \(--model net, --optimizer sgd\): .*missing entry 'param_groups.0.momentum'" \
  "resume with the flags that wrote it"
exit $fail
