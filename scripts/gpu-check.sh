#!/usr/bin/env bash
# The checks that need a lent GPU machine, for the few minutes one is lent, in two steps:
#
#   scripts/gpu-check.sh prepare   on the development machine (the CUDA toolkit, no GPU):
#                                  builds cuda_tests, mnist_cuda, resnet_cuda and
#                                  train_bench_cuda (Release, nvcc) and backend_tests,
#                                  ops_tests, mnist, train_bench and op_bench (g++), and
#                                  gathers them, the libraries they link that are not CUDA's
#                                  or the C library's, MNIST and Fashion-MNIST into gpu-check/
#                                  (ignored by git), the programs and libraries packed again
#                                  into gpu-check/programs.tar.xz: what travels is that and
#                                  gpu-check/data, about 60 MB
#   scripts/gpu-check.sh run [cpu] [cpu-bench] [gpu]
#                                  on the GPU machine, in the repository root with
#                                  gpu-check/programs.tar.xz and gpu-check/data carried
#                                  along (or all of gpu-check/); all three by default.
#                                  The GPU machines' CPUs are where the amx level is checked
#                                  when the development machine has no AMX.
#                                  cpu: the CPU's model and flags, backend_tests and ops_tests
#                                  at its level (and backend_tests capped at avx512_bf16
#                                  where AMX is above it), op_bench in float32 and in bf16 at
#                                  its level and capped at avx512_bf16, train_bench's NET and
#                                  LeNet in bf16 at avx512_bf16 and at avx512 against float32
#                                  (3 rounds, about 1 minute), and the example (the
#                                  g++ build) trained for 5 epochs with --autocast bf16,
#                                  seeds 1-3 at once, 5 threads each (about 1.5 minutes);
#                                  cpu-bench: bench/run.py's autocast comparison against the
#                                  machine's PyTorch, NET, LeNet and ResNet-20, 2 threads,
#                                  3 rounds of 20 batches, capped at avx512 and avx512_bf16 too
#                                  (about 6 minutes);
#                                  gpu: cuda_tests, mnist_cuda for one epoch in float32 and
#                                  with --autocast bf16, bench/gpu_bench.py (train_bench_cuda
#                                  against the machine's PyTorch, one epoch a run, 3 runs),
#                                  then resnet_cuda and its PyTorch twin
#                                  (bench/pytorch_resnet.py) for one epoch of Fashion-MNIST
#                                  each, float32 and bf16 (about 3.5 minutes on an H100).
#                                  Writes gpu-check/report.txt, and $OUT/report.txt (with
#                                  cpu-bench.json) where OUT is set.
# The machine needs the NVIDIA driver, CUDA 13's runtime and cuBLAS, and a python3 with
# PyTorch (the GPU machines of docs/gpu.md have them). Each step has a time limit: 2 minutes
# for op_bench, 9 for the CPU benchmark, 4 for the others.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=gpu-check
build=build/release

prepare() {
  local nvcc="${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
  [[ -x "$nvcc" ]] || { echo "gpu-check: no nvcc (CUDACXX, PATH or /usr/local/cuda/bin)" >&2; exit 2; }
  CUDACXX="$nvcc" cmake --preset release -DTINYNET_WITH_CUDA=ON
  cmake --build "$build" --target cuda_tests mnist_cuda resnet_cuda train_bench_cuda \
    backend_tests ops_tests train_bench op_bench mnist
  rm -rf "$dir" && mkdir -p "$dir/bin" "$dir/lib" "$dir/data"
  cp "$build/tests/cuda/cuda_tests" "$build/examples/mnist/mnist_cuda" "$build/examples/resnet/resnet_cuda" \
    "$build/bench/train_bench_cuda" "$build/tests/backend_tests" "$build/tests/ops_tests" \
    "$build/bench/train_bench" "$build/bench/op_bench" "$build/examples/mnist/mnist" "$dir/bin/"
  # The libraries the machine may lack (oneTBB, Gloo, libpng, ...): all but CUDA's own and
  # the C and C++ runtimes, which it has.
  ldd "$dir"/bin/* | awk '/=> \// {print $3}' | sort -u |
    grep -vE '/(libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+|ld-linux[^/]*)\.so|/lib(cuda|cudart|cublas|cublasLt|nccl)\.so' |
    while read -r lib; do cp -L "$lib" "$dir/lib/"; done
  local data="${TINYNET_DATA_DIR:-../shared/data}"
  [[ -d "$data/mnist" ]] || data=data
  [[ -d "$data/mnist" && -d "$data/fashion-mnist" ]] ||
    { echo "gpu-check: no MNIST and Fashion-MNIST in ../shared/data or ./data (TINYNET_DATA_DIR)" >&2; exit 2; }
  cp -r "$data/mnist" "$data/fashion-mnist" "$dir/data/"
  # The commit built (the GPU machine's copy of the tree may carry no git history).
  echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- include src examples tests bench || echo ' with changes')" > "$dir/lib/commit"
  tar -cJf "$dir/programs.tar.xz" -C "$dir" bin lib
  du -sh "$dir/programs.tar.xz" "$dir/data"
  echo "gpu-check: ready; on the GPU machine, with $dir/programs.tar.xz and $dir/data carried: scripts/gpu-check.sh run [cpu] [cpu-bench] [gpu]"
}

run() {
  if [[ ! -d "$dir/bin" && -f "$dir/programs.tar.xz" ]]; then  # Python's tarfile: xz may be missing there
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$dir/programs.tar.xz" "$dir"
  fi
  [[ -d "$dir/bin" ]] || { echo "gpu-check: no $dir/bin: run 'scripts/gpu-check.sh prepare' first" >&2; exit 2; }
  export LD_LIBRARY_PATH="$PWD/$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  local parts=("$@") part names=(cpu cpu-bench gpu)
  local -A checks=([cpu]=cpu_checks [cpu-bench]=cpu_bench [gpu]=gpu_checks)  # each part, and what runs it
  ((${#parts[@]})) || parts=("${names[@]}")
  for part in "${parts[@]}"; do
    [[ -n "$part" && -n "${checks[$part]:-}" ]] || { echo "gpu-check: run takes ${names[*]}, not '$part'" >&2; exit 2; }
  done
  local report="$dir/report.txt" status=0
  rm -f "$dir/cpu-bench.json" "$dir"/mnist-seed?.txt
  : > "$report"
  step() {  # step NAME SECONDS COMMAND...: runs it, its output and exit status into the report
    local name="$1" limit="$2" rc=0
    shift 2
    echo "== $name: $*" | tee -a "$report"
    local start=$SECONDS
    timeout "$limit" "$@" >> "$report" 2>&1 || rc=$?
    echo "== $name: exit $rc, $((SECONDS - start)) s" | tee -a "$report"
    ((rc == 0)) || status=1
  }
  {
    echo "gpu-check on $(hostname), $(date -u +%Y-%m-%dT%H:%MZ), programs built at $(cat "$dir/lib/commit" 2>/dev/null || echo 'an unknown commit')"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || true
    python3 -c 'import torch; print("PyTorch", torch.__version__, "CUDA", torch.version.cuda)' 2>&1 || true
  } >> "$report"
  mkdir -p "$dir/build/bench"
  cp "$dir/bin/train_bench_cuda" "$dir/bin/train_bench" "$dir/bin/op_bench" "$dir/build/bench/"
  for part in "${parts[@]}"; do "${checks[$part]}"; done
  [[ -n "${OUT:-}" ]] && cp "$report" "$OUT/report.txt" && { [[ ! -f "$dir/cpu-bench.json" ]] || cp "$dir/cpu-bench.json" "$OUT/"; }
  echo "gpu-check: report in $report"
  return $status
}

cpu_checks() {
  {
    grep -m1 '^model name' /proc/cpuinfo || true
    echo "cores: $(nproc); flags: $(grep -m1 -o -w -E 'avx512_bf16|amx_bf16|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' ')"
  } >> "$report"
  step backend_tests 240 "$dir/bin/backend_tests"
  step ops_tests 240 "$dir/bin/ops_tests"
  if grep -q -w amx_bf16 /proc/cpuinfo; then  # avx512_bf16 too where uncapped runs amx (as tests/at_avx512_bf16.sh)
    step backend_tests@avx512_bf16 240 env TINYNET_CPU_ISA=avx512_bf16 "$dir/bin/backend_tests"
  fi
  local level
  for level in "" avx512_bf16; do
    step "op_bench_bf16${level:+@$level}" 120 env ${level:+TINYNET_CPU_ISA=$level} "$dir/bin/op_bench" \
      --threads 2 --autocast bf16
  done
  step op_bench_f32 120 "$dir/bin/op_bench" --threads 2
  # bfloat16's two routes below the tiles, on vdpbf16ps (avx512_bf16) and in the float32
  # kernels (avx512), against float32: which one a CPU whose vdpbf16ps is no faster than
  # its FMAs should take.
  step bf16_routes 180 bash -c 'rc=0; for rep in 1 2 3; do for m in net lenet; do
      for run in "avx512 off" "avx512_bf16 bf16" "avx512 bf16"; do set -- $run
        out=$(TINYNET_CPU_ISA=$1 "$0/build/bench/train_bench" --model $m --threads 2 --batches 30 --warmup 5 \
          --autocast $2 --data-dir "$0/data") || rc=1
        echo "$rep $m $1 $2 $(echo "$out" | grep -o -E "\"(cpu_isa|images_per_s)\": [^,]*" | tr "\n" " ")"
      done; done; done; exit $rc' "$dir"
  step mnist_bf16_seeds 240 bash -c 'rc=0 pids=()
    for seed in 1 2 3; do
      "$0/bin/mnist" --autocast bf16 --epochs 5 --seed $seed --threads 5 --log-interval 100000 \
        --data-dir "$0/data" > "$0/mnist-seed$seed.txt" 2>&1 & pids+=($!)
    done
    for pid in "${pids[@]}"; do wait $pid || rc=1; done
    grep -H -E "CPU kernels|accuracy=" "$0"/mnist-seed?.txt; exit $rc' "$dir"
}

cpu_bench() {
  step cpu_bench 600 python3 bench/run.py --python python3 --build-dir "$dir/build" --data-dir "$dir/data" \
    --models net,lenet,resnet20 --autocast --levels avx512,avx512_bf16 --threads 2 --reps 3 --batches 20 \
    --no-ops --no-build-time --out "$dir/cpu-bench.json"
}

gpu_checks() {
  step cuda_tests 240 "$dir/bin/cuda_tests"
  step mnist_cuda_float32 240 "$dir/bin/mnist_cuda" --epochs 1 --data-dir "$dir/data"
  step mnist_cuda_bf16 240 "$dir/bin/mnist_cuda" --epochs 1 --autocast bf16 --data-dir "$dir/data"
  step gpu_bench 240 python3 bench/gpu_bench.py --build-dir "$dir/build" --data-dir "$dir/data" --reps 3
  step resnet_cuda_float32 240 "$dir/bin/resnet_cuda" --epochs 1 --data-dir "$dir/data"
  step resnet_cuda_bf16 240 "$dir/bin/resnet_cuda" --epochs 1 --autocast bf16 --data-dir "$dir/data"
  step pytorch_resnet_float32 240 python3 bench/pytorch_resnet.py --device cuda --epochs 1 --data-dir "$dir/data"
  step pytorch_resnet_bf16 240 python3 bench/pytorch_resnet.py --device cuda --epochs 1 --autocast bf16 --data-dir "$dir/data"
}

case "${1:-}" in
  prepare) prepare ;;
  run) shift; run "$@" ;;
  *)
    echo "usage: scripts/gpu-check.sh prepare | run [cpu] [cpu-bench] [gpu]" >&2
    exit 2
    ;;
esac
