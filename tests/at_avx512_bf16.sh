#!/usr/bin/env bash
# at_avx512_bf16.sh TEST [ARGS...]: runs a test binary capped at the avx512_bf16 level where
# the uncapped run takes another level and would leave avx512_bf16 untested: on a CPU with
# AMX (the amx level), and on an Intel CPU with AVX512-BF16, where avx512 runs uncapped. The
# vendor rule is cpu_bf16_dot_outpaces_fma() in include/tinynet/backend/cpu/isa.hpp; keep the
# two alike. Elsewhere the uncapped run already is (or is below) that level: reported
# skipped (77).
set -euo pipefail
flags=$(grep -m1 -w '^flags' /proc/cpuinfo 2> /dev/null || true)
vendor=$(grep -m1 -w '^vendor_id' /proc/cpuinfo 2> /dev/null || true)
if ! grep -qw amx_bf16 <<< "$flags" && ! { grep -qw avx512_bf16 <<< "$flags" && grep -qw GenuineIntel <<< "$vendor"; }; then
  echo "SKIP: neither AMX nor an Intel CPU with AVX512-BF16; the uncapped run of $(basename "$1") is at avx512_bf16 or below"
  exit 77
fi
TINYNET_CPU_ISA=avx512_bf16 exec "$@"
