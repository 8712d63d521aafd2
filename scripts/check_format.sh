#!/usr/bin/env bash
# Fails, naming the files, when a tracked C++/CUDA file differs from what clang-format makes
# of it under the root .clang-format. `scripts/check_format.sh --fix` formats them in place.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mapfile -t files < <(git ls-files '*.h' '*.cpp' '*.cu' '*.cuh')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
unformatted=()
for file in "${files[@]}"; do
  clang-format --dry-run --Werror "$file" >/dev/null 2>&1 || unformatted+=("$file")
done
if [ ${#unformatted[@]} -gt 0 ]; then
  echo "error: ${#unformatted[@]} file(s) are not formatted as .clang-format says:" >&2
  printf '  %s\n' "${unformatted[@]}" >&2
  echo "run scripts/check_format.sh --fix (or clang-format -i FILE) and commit the result" >&2
  exit 1
fi
echo "== format: ${#files[@]} files match .clang-format"
