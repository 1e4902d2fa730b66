#!/usr/bin/env bash
# The compile time and peak memory of one file of a user's project, as that project builds
# it: Release, no other flag, linking tinynet::cpu_kernels (or, with --headers-only, not),
# with tinynet found by find_package (installed into a scratch prefix) and added by
# add_subdirectory. Only the file's own compile is timed (a compiler launcher around it),
# not the library's.
#
#   bench/compile_time.sh [--tinynet DIR] [--source FILE] [--runs N] [--headers-only]
#
# DIR: the tinynet source tree to measure (default: this one; a `git worktree` of another
# commit compares the two). FILE: default examples/snippets/readme_train.cpp, the README's
# program. Prints each run and the median wall seconds and peak resident MB per mode.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
tinynet=$here source=$here/examples/snippets/readme_train.cpp runs=3 kernels=tinynet::cpu_kernels
while [ $# -gt 0 ]; do
  case $1 in
    --tinynet) tinynet=$(cd "$2" && pwd); shift 2 ;;
    --source) source=$(realpath "$2"); shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --headers-only) kernels=; shift ;;
    *) echo "compile_time.sh: unknown argument $1 (expected --tinynet DIR, --source FILE, --runs N, --headers-only)" >&2
       exit 2 ;;
  esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake -S "$tinynet" -B "$work/tinynet-build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTINYNET_BUILD_TESTS=OFF \
  -DTINYNET_BUILD_EXAMPLES=OFF -DTINYNET_BUILD_BENCH=OFF -DTINYNET_WITH_CUDA=OFF > /dev/null
cmake --build "$work/tinynet-build" > /dev/null
cmake --install "$work/tinynet-build" --prefix "$work/prefix" > /dev/null

mkdir -p "$work/package" "$work/subdirectory"
cp "$source" "$work/package/main.cpp"
cp "$source" "$work/subdirectory/main.cpp"
cat > "$work/package/CMakeLists.txt" << EOF
cmake_minimum_required(VERSION 3.21)
project(app LANGUAGES CXX)
find_package(tinynet CONFIG REQUIRED)
add_executable(app main.cpp)
target_link_libraries(app PRIVATE tinynet::tinynet tinynet::data $kernels)
EOF
cat > "$work/subdirectory/CMakeLists.txt" << EOF
cmake_minimum_required(VERSION 3.21)
project(app LANGUAGES CXX)
add_subdirectory($tinynet tinynet)
add_executable(app main.cpp)
target_link_libraries(app PRIVATE tinynet::tinynet tinynet::data $kernels)
EOF

for mode in package subdirectory; do
  times=$work/$mode.times
  cmake -S "$work/$mode" -B "$work/$mode/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$work/prefix" \
    "-DCMAKE_CXX_COMPILER_LAUNCHER=/usr/bin/time;-f;%e %M;-a;-o;$times" > /dev/null
  object=CMakeFiles/app.dir/main.cpp.o
  for ((run = 1; run <= runs; run++)); do
    rm -f "$work/$mode/build/$object"
    cmake --build "$work/$mode/build" --target "$object" > /dev/null
  done
  python3 - "$mode" "$times" << 'EOF'
import statistics, sys
mode, path = sys.argv[1], sys.argv[2]
runs = [tuple(float(v) for v in line.split()) for line in open(path) if line.strip()]
for s, kb in runs:
    print(f"{mode}: {s:.1f} s, {kb / 1024:.0f} MB")
print(f"{mode}: median {statistics.median(s for s, _ in runs):.1f} s, "
      f"{statistics.median(kb for _, kb in runs) / 1024:.0f} MB peak ({len(runs)} runs)")
EOF
done
