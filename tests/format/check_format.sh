#!/usr/bin/env bash
# Fails, listing the files, when clang-format-14 with the repository's .clang-format would
# change any C++ file of the project. Usage: check_format.sh CLANG_FORMAT SOURCE_DIR
set -euo pipefail
clang_format=$1
cd "$2"
mapfile -t files < <(find include src tests examples bench -type f \( -name '*.hpp' -o -name '*.cpp' -o -name '*.h' -o -name '*.inl' -o -name '*.cu' \) | sort)
unformatted=()
for f in "${files[@]}"; do
  if ! "$clang_format" --dry-run --Werror "$f" > /dev/null 2>&1; then unformatted+=("$f"); fi
done
if ((${#unformatted[@]})); then
  echo "clang-format would change ${#unformatted[@]} of ${#files[@]} files (run: $clang_format -i FILE):"
  printf '  %s\n' "${unformatted[@]}"
  exit 1
fi
echo "all ${#files[@]} C++ files are formatted"
