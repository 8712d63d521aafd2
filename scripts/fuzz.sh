#!/usr/bin/env bash
# Builds every libFuzzer target in fuzz/ (fuzz/*_fuzz.cpp) and runs each for SECONDS (default
# 60), as many at once as there are cores, each from a temporary copy of its seed corpus
# fuzz/corpus/<target>/ so the repo does not grow. Exits non-zero on any finding; crashing
# inputs are kept in <build>/findings/<target>/ with the fuzzer's log, to reproduce with
# `<build>/<target> FILE`. Ten targets at 20 s take about two minutes on two cores.
#
#   scripts/fuzz.sh [SECONDS]        environment: ZT_FUZZ_BUILD_DIR (default build-fuzz),
#                                    ZT_FUZZ_TARGETS (space-separated subset), CXX (clang++),
#                                    ZT_FUZZ_JOBS (targets at once, default: the cores)
set -euo pipefail

seconds=${1:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${ZT_FUZZ_BUILD_DIR:-$root/build-fuzz}
targets=${ZT_FUZZ_TARGETS:-$(cd "$root/fuzz" && ls *_fuzz.cpp | sed 's/\.cpp$//')}
jobs=${ZT_FUZZ_JOBS:-$(nproc)}

cmake -S "$root/fuzz" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="${CXX:-clang++}" >/dev/null
cmake --build "$build" --target $targets

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Runs one target; its report goes to $work/<target>/report, its status is the fuzzer's.
fuzz_target() {
  local target=$1 dir="$work/$1"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp -r "$root/fuzz/corpus/$target/." "$dir/corpus/" 2>/dev/null || true
  local dict=()
  [[ -f "$root/fuzz/$target.dict" ]] && dict=(-dict="$root/fuzz/$target.dict")
  if "$build/$target" -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
       -print_final_stats=1 -artifact_prefix="$dir/artifacts/" "${dict[@]}" "$dir/corpus" >"$dir/log" 2>&1; then
    { echo "== $target: ${seconds}s"; grep -E '^Done|stat::number_of_executed_units|stat::peak_rss_mb' "$dir/log"; } \
      >"$dir/report" || true
    return 0
  fi
  mkdir -p "$build/findings/$target"
  cp "$dir/log" "$dir/artifacts/"* "$build/findings/$target/" 2>/dev/null || true
  {
    echo "== $target: FINDING (inputs and log in $build/findings/$target):"
    grep -E -A12 'ERROR|runtime error|deadly signal|uncaught exception|what\(\)' "$dir/log" | head -40 || tail -40 "$dir/log"
  } >"$dir/report"
  return 1
}

findings=0
running=0
for target in $targets; do
  if ((running >= jobs)); then
    wait -n || findings=1
    running=$((running - 1))
  fi
  fuzz_target "$target" &
  running=$((running + 1))
done
while ((running > 0)); do
  wait -n || findings=1
  running=$((running - 1))
done
for target in $targets; do cat "$work/$target/report"; done
exit $findings
