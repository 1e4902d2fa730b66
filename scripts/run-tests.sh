#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds tinynet in Release and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup-debian.sh --tests
# torchrun 2.6 for the launch tests against the torchrun users install today: a Debian 13
# chroot, made once and cached (81 s and 1.3 GB on disk here). Without it those tests are
# reported skipped, saying why.
bash scripts/make-trixie-chroot.sh > /dev/null || echo "run-tests: no trixie chroot; the torchrun 2.6 tests will be skipped"
# The CUDA toolkit's nvcc, where installed, builds (but without a GPU does not run) the
# CUDA tests and mnist_cuda.
if ! command -v nvcc > /dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export CUDACXX=/usr/local/cuda/bin/nvcc; fi
# Each stage's wall time is printed as it ends, with how busy the CPUs were (of it, the
# share at low priority: the sanitizer builds): where CI's time goes, and what is left idle.
cpu_ticks() {  # busy, niced and idle clock ticks of all CPUs since boot (/proc/stat)
  local _ user nice system idle iowait irq softirq steal
  read -r _ user nice system idle iowait irq softirq steal _ < /proc/stat
  echo "$((user + nice + system + irq + softirq + steal)) $nice $((idle + iowait))"
}
start=$SECONDS stage_start=$SECONDS
read -r busy0 nice0 idle0 <<< "$(cpu_ticks)"
stage() {
  local busy niced idle
  read -r busy niced idle <<< "$(cpu_ticks)"
  local all=$((busy - busy0 + idle - idle0)) use=""
  if [ "$all" -gt 0 ] && [ $((SECONDS - stage_start)) -gt 0 ]; then
    use="; CPUs $((100 * (busy - busy0) / all))% busy, $((100 * (niced - nice0) / all))% at low priority"
  fi
  echo "run-tests: $1 took $((SECONDS - stage_start)) s ($((SECONDS - start)) s in all)$use"
  stage_start=$SECONDS busy0=$busy nice0=$niced idle0=$idle
}
cmake --preset release -DTINYNET_BUILD_TESTS=ON
cmake --build --preset release
stage "the Release build"
# AddressSanitizer + UBSan over the unit tests, ThreadSanitizer over the threaded parts. Their
# builds run at the lowest priority beside the Release tests, on the CPU time those leave
# idle (many tests wait on peers, signals and child processes); the tests keep their priority.
# Its own process group, so that an early exit stops the whole build.
sanitizer_log=$(mktemp)
CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) setsid nice -n 19 bash scripts/run-sanitizers.sh --build > "$sanitizer_log" 2>&1 &
sanitizer_build=$!
trap 'kill -- -$sanitizer_build 2> /dev/null || true' EXIT
ctest --preset release -j "$(nproc)"
stage "the Release tests"
if ! wait $sanitizer_build; then
  cat "$sanitizer_log"
  echo "run-tests: the sanitizer builds failed (above)" >&2
  exit 1
fi
trap - EXIT  # the build's process group has ended; its number may be reused
stage "the rest of the sanitizer builds"
bash scripts/run-sanitizers.sh --test
stage "the sanitizer tests"
