#!/usr/bin/env bash
# Builds every libFuzzer target in fuzz/ (fuzz/*_fuzz.cpp) and runs each for SECONDS (default
# 60), starting from a temporary copy of its seed corpus fuzz/corpus/<target>/ so the repo
# does not grow. Exits non-zero on any finding; crashing inputs are kept in
# <build>/findings/<target>/ with the fuzzer's log, to reproduce with `<build>/<target> FILE`.
#
#   scripts/fuzz.sh [SECONDS]        environment: ZT_FUZZ_BUILD_DIR (default build-fuzz),
#                                    ZT_FUZZ_TARGETS (space-separated subset), CXX (clang++)
set -euo pipefail

seconds=${1:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${ZT_FUZZ_BUILD_DIR:-$root/build-fuzz}
targets=${ZT_FUZZ_TARGETS:-$(cd "$root/fuzz" && ls *_fuzz.cpp | sed 's/\.cpp$//')}

cmake -S "$root/fuzz" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="${CXX:-clang++}" >/dev/null
cmake --build "$build" --target $targets

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
findings=0
for target in $targets; do
  mkdir -p "$work/$target/corpus" "$work/$target/artifacts"
  cp -r "$root/fuzz/corpus/$target/." "$work/$target/corpus/" 2>/dev/null || true
  dict=()
  [[ -f "$root/fuzz/$target.dict" ]] && dict=(-dict="$root/fuzz/$target.dict")
  log="$work/$target/log"
  echo "== $target: ${seconds}s"
  if "$build/$target" -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
       -print_final_stats=1 -artifact_prefix="$work/$target/artifacts/" "${dict[@]}" \
       "$work/$target/corpus" >"$log" 2>&1; then
    grep -E '^Done|stat::number_of_executed_units|stat::peak_rss_mb' "$log" || true
  else
    findings=1
    mkdir -p "$build/findings/$target"
    cp "$log" "$work/$target/artifacts/"* "$build/findings/$target/" 2>/dev/null || true
    echo "FINDING in $target (inputs and log in $build/findings/$target):"
    grep -E -A12 'ERROR|runtime error|deadly signal|uncaught exception' "$log" | head -40 || tail -40 "$log"
  fi
done
exit $findings
