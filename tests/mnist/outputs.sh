#!/usr/bin/env bash
# Every output path is tried before the data is loaded: an unwritable one ends the run at
# once with exit code 4 and a message naming its flag, and nothing is trained. Read-only
# volumes are read-only bind mounts (unshare --mount: root only; not run otherwise, the
# other cases still run). Usage: outputs.sh BIN DATA_DIR WORK_DIR
set -uo pipefail
bin=$1 data=$2 work=$3
rm -rf "$work" && mkdir -p "$work/ro/existing" "$work/dir.png"
fail=0
check() {  # check NAME REGEX OUTPUT_FILE RC
  local name=$1 regex=$2 out=$3 rc=$4
  if (( rc != 4 )) || ! grep -Eq -e "$regex" "$out" || grep -q "^Loaded\|Epoch" "$out"; then
    echo "FAIL $name: exit $rc (expected 4, before loading the data), output:"; cat "$out"; fail=1
  else
    echo "ok   $name: $(grep -E -e "$regex" "$out" | head -n 1)"
  fi
}
refused() {  # refused NAME REGEX -- ARGS...
  local name=$1 regex=$2; shift 3
  timeout 60 "$bin" --data-dir "$data" --epochs 1 --limit-train-batches 1 --threads 1 "$@" > "$work/$name.out" 2>&1
  check "$name" "$regex" "$work/$name.out" $?
}
missing=$work/no/such/dir
refused model_path_dir "error: --model-path: cannot write '$missing/m.tnet': its directory '$missing' does not exist" \
  -- --save-model --model-path "$missing/m.tnet"
refused save_pytorch_dir "error: --save-pytorch: cannot write .*does not exist" -- --save-pytorch "$missing/m.pt"
refused export_onnx_dir "error: --export-onnx: cannot write .*does not exist" -- --export-onnx "$missing/m.onnx"
refused png_is_dir "error: --predictions-png: cannot write '$work/dir.png': it is a directory" \
  -- --predictions-png "$work/dir.png"
refused confusion_dir "error: --confusion-png: cannot write .*does not exist" -- --confusion-png "$missing/c.png"
refused metrics_dir "error: --metrics-jsonl: cannot write .*does not exist" -- --metrics-jsonl "$missing/m.jsonl"
refused checkpoint_in_proc "error: --checkpoint-dir: cannot write into '/proc/tinynet-ckpt'" \
  -- --checkpoint-dir /proc/tinynet-ckpt
refused tensorboard_in_proc "error: --tensorboard: cannot write into '/proc/tinynet-tb'" -- --tensorboard /proc/tinynet-tb
# --evaluate writes only the ONNX file and the pictures; they too are tried before loading.
head -c 100 /dev/urandom > "$work/model.tnet"
refused evaluate_onnx "error: --export-onnx: cannot write .*does not exist" \
  -- --evaluate "$work/model.tnet" --export-onnx "$missing/m.onnx"
# A data-parallel rank other than 0 writes nothing, so it does not try (and fails later,
# here on the launch variables, not on the output path).
WORLD_SIZE=2 RANK=1 timeout 60 "$bin" --data-dir "$data" --save-model --model-path "$missing/m.tnet" \
  > "$work/rank1.out" 2>&1
rc=$?
if (( rc != 2 )) || grep -q "model-path" "$work/rank1.out"; then
  echo "FAIL rank1: exit $rc (expected 2: MASTER_ADDR unset), output:"; cat "$work/rank1.out"; fail=1
else
  echo "ok   rank1: $(grep error "$work/rank1.out")"
fi

if [[ $(id -u) == 0 ]] && unshare --mount true 2> /dev/null; then
  # A read-only volume (root writes anywhere else): each output flag pointed into it.
  for flag in "--checkpoint-dir $work/ro/ckpt" "--checkpoint-dir $work/ro/existing" "--tensorboard $work/ro/existing" \
      "--save-model --model-path $work/ro/m.tnet" "--metrics-jsonl $work/ro/m.jsonl" \
      "--predictions-png $work/ro/p.png"; do
    name=ro_$(echo "$flag" | sed 's/.*--\([a-z-]*\) .*/\1/')
    unshare --mount bash -c 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"' _ \
      "$work/ro" timeout 60 "$bin" --data-dir "$data" --epochs 1 --limit-train-batches 1 --threads 1 $flag \
      > "$work/$name.out" 2>&1
    check "$name" "cannot write .*'$work/ro/.*Read-only file system" "$work/$name.out" $?
  done
else
  echo "not run: the read-only volume cases (they need root and unshare --mount)"
fi
if ls -A "$work/ro" | grep -v '^existing$'; then echo "FAIL: the checks left files behind"; fail=1; fi
exit $fail
