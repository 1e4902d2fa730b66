#!/usr/bin/env bash
# The GPU checks that matter, for a GPU machine lent for a few minutes, in two steps:
#
#   scripts/gpu-check.sh prepare   on the development machine (the CUDA toolkit, no GPU):
#                                  builds cuda_tests, mnist_cuda, resnet_cuda and
#                                  train_bench_cuda (Release, nvcc) and gathers them, the
#                                  libraries they link that are not CUDA's or the C library's,
#                                  MNIST and Fashion-MNIST into gpu-check/ (ignored by git),
#                                  the programs and libraries packed again into
#                                  gpu-check/programs.tar.xz: what travels is that and
#                                  gpu-check/data, about 55 MB
#   scripts/gpu-check.sh run       on the GPU machine, in the repository root with
#                                  gpu-check/programs.tar.xz and gpu-check/data carried
#                                  along (or all of gpu-check/): runs cuda_tests, mnist_cuda for one epoch in
#                                  float32 and with --autocast bf16, and bench/gpu_bench.py
#                                  (train_bench_cuda against the machine's PyTorch, one epoch
#                                  a run, 3 runs), then resnet_cuda and its PyTorch twin
#                                  (bench/pytorch_resnet.py) for one epoch of Fashion-MNIST
#                                  each, float32 and bf16; writes gpu-check/report.txt, and
#                                  $OUT/report.txt where OUT is set
#
# The machine needs the NVIDIA driver, CUDA 13's runtime and cuBLAS, and a python3 with
# PyTorch (the GPU machines of docs/gpu.md have them). `run` takes about 3.5 minutes on an H100;
# each step is stopped after 4 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=gpu-check
build=build/release

prepare() {
  local nvcc="${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
  [[ -x "$nvcc" ]] || { echo "gpu-check: no nvcc (CUDACXX, PATH or /usr/local/cuda/bin)" >&2; exit 2; }
  CUDACXX="$nvcc" cmake --preset release -DTINYNET_WITH_CUDA=ON
  cmake --build "$build" --target cuda_tests mnist_cuda resnet_cuda train_bench_cuda
  rm -rf "$dir" && mkdir -p "$dir/bin" "$dir/lib" "$dir/data"
  cp "$build/tests/cuda/cuda_tests" "$build/examples/mnist/mnist_cuda" "$build/examples/resnet/resnet_cuda" \
    "$build/bench/train_bench_cuda" "$dir/bin/"
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
  echo "gpu-check: ready; on the GPU machine, with $dir/programs.tar.xz and $dir/data carried: scripts/gpu-check.sh run"
}

run() {
  if [[ ! -d "$dir/bin" && -f "$dir/programs.tar.xz" ]]; then  # Python's tarfile: xz may be missing there
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$dir/programs.tar.xz" "$dir"
  fi
  [[ -d "$dir/bin" ]] || { echo "gpu-check: no $dir/bin: run 'scripts/gpu-check.sh prepare' first" >&2; exit 2; }
  export LD_LIBRARY_PATH="$PWD/$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  local report="$dir/report.txt" status=0
  : > "$report"
  step() {  # step NAME COMMAND...: runs it, its output and exit status into the report
    local name="$1" rc=0
    shift
    echo "== $name: $*" | tee -a "$report"
    local start=$SECONDS
    timeout 240 "$@" >> "$report" 2>&1 || rc=$?
    echo "== $name: exit $rc, $((SECONDS - start)) s" | tee -a "$report"
    ((rc == 0)) || status=1
  }
  {
    echo "gpu-check on $(hostname), $(date -u +%Y-%m-%dT%H:%MZ), programs built at $(cat "$dir/lib/commit" 2>/dev/null || echo 'an unknown commit')"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || true
    python3 -c 'import torch; print("PyTorch", torch.__version__, "CUDA", torch.version.cuda)' 2>&1 || true
  } >> "$report"
  step cuda_tests "$dir/bin/cuda_tests"
  step mnist_cuda_float32 "$dir/bin/mnist_cuda" --epochs 1 --data-dir "$dir/data"
  step mnist_cuda_bf16 "$dir/bin/mnist_cuda" --epochs 1 --autocast bf16 --data-dir "$dir/data"
  mkdir -p "$dir/build/bench"
  cp "$dir/bin/train_bench_cuda" "$dir/build/bench/"
  step gpu_bench python3 bench/gpu_bench.py --build-dir "$dir/build" --data-dir "$dir/data" --reps 3
  step resnet_cuda_float32 "$dir/bin/resnet_cuda" --epochs 1 --data-dir "$dir/data"
  step resnet_cuda_bf16 "$dir/bin/resnet_cuda" --epochs 1 --autocast bf16 --data-dir "$dir/data"
  step pytorch_resnet_float32 python3 bench/pytorch_resnet.py --device cuda --epochs 1 --data-dir "$dir/data"
  step pytorch_resnet_bf16 python3 bench/pytorch_resnet.py --device cuda --epochs 1 --autocast bf16 --data-dir "$dir/data"
  [[ -n "${OUT:-}" ]] && cp "$report" "$OUT/report.txt"
  echo "gpu-check: report in $report"
  return $status
}

case "${1:-}" in
  prepare) prepare ;;
  run) run ;;
  *)
    echo "usage: scripts/gpu-check.sh prepare|run" >&2
    exit 2
    ;;
esac
