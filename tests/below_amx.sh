#!/usr/bin/env bash
# below_amx.sh TEST [ARGS...]: runs a test binary capped at the avx512_bf16 level on a CPU
# with AMX, where the uncapped run takes the amx level and would leave avx512_bf16 untested.
# Elsewhere the uncapped run already is (or is below) that level: reported skipped (77).
set -euo pipefail
if ! grep -qw amx_bf16 /proc/cpuinfo 2> /dev/null; then
  echo "SKIP: no AMX on this CPU; the uncapped run of $(basename "$1") is at avx512_bf16 or below"
  exit 77
fi
TINYNET_CPU_ISA=avx512_bf16 exec "$@"
