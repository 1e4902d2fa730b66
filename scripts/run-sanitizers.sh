#!/usr/bin/env bash
# The sanitizer stage (scripts/run-tests.sh runs it after the Release tests):
#  - AddressSanitizer + UBSan (preset debug-asan): the unit tests of every area (core,
#    backend, autograd, ops, nn, optim, io, data, metrics, dist). Each test executable is
#    one translation unit (unity build) compiled with -g1, which keeps this within CI's time
#    (docs/testing.md has the measurements).
#  - ThreadSanitizer (preset tsan): the threaded parts, i.e. the store server with its clients
#    and DDP's communication thread (dist_tests), and multi-process jobs whose ranks run the
#    store, Gloo and DDP threads together (run_ranks.py scenarios).
# Any report fails the stage: ASan aborts, UBSan is built with -fno-sanitize-recover, TSan
# runs with halt_on_error (and tests/dist/tsan.supp: what it cannot see inside libgloo).
set -euo pipefail
cd "$(dirname "$0")/.."

areas=(core backend autograd ops nn optim io data metrics dist)
# --build: configure and build only (scripts/run-tests.sh does it at the lowest priority while
# the Release tests run); --test: run only, on builds already made; neither: both.
# --all: what an earlier version ran besides its default; every area is now the default.
build=1 test=1
case "${1:-}" in
  "" | --all) ;;
  --build) test=0 ;;
  --test) build=0 ;;
  *)
    echo "usage: $0 [--build | --test]" >&2
    exit 2
    ;;
esac
targets=()
for a in "${areas[@]}"; do targets+=("${a}_tests"); done
unit_tests="^($(
  IFS='|'
  echo "${areas[*]}"
))_tests:"
jobs=$(nproc)

if ((build)); then
  cmake --preset debug-asan
  cmake --build --preset debug-asan --target "${targets[@]}"
  cmake --preset tsan
  cmake --build --preset tsan --target dist_tests dist_worker
fi
if ((test)); then
  ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --preset debug-asan -j "$jobs" -R "$unit_tests"
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/dist/tsan.supp \
    ctest --preset tsan -j "$jobs" -R '^dist_tests:|^dist\.(collectives-3|ddp-seq-2|ddp-free-3-buckets|kill-peer-3)$'
fi
