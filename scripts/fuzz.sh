#!/usr/bin/env bash
# Builds every libFuzzer target in fuzz/ (fuzz/*_fuzz.cpp) and runs each for SECONDS (default
# 60), as many at once as there are cores, each from a temporary copy of its seed corpus
# fuzz/corpus/<target>/ so the repo does not grow. Exits non-zero on any finding; crashing
# inputs are kept in <build>/findings/<target>/ with the fuzzer's log, to reproduce with
# `<build>/<target> FILE`. The last line is the verdict: "fuzz: 14 targets, 20 s each, no
# crash", or which targets failed and where their inputs are. Fourteen targets at 20 s take
# about two and a half minutes on two cores once built.
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

count=$(wc -w <<<"$targets")
echo "== building $count fuzz targets with ${CXX:-clang++} (libFuzzer, ASan, UBSan) into $build"
cmake -S "$root/fuzz" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="${CXX:-clang++}" >/dev/null &&
  cmake --build "$build" --target $targets ||
  { echo "fuzz: the $count targets did not build (errors above), nothing was fuzzed"; exit 1; }
echo "== fuzzing $count targets for $seconds s each, $jobs at a time"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Runs one target; its report goes to $work/<target>/report, its status is the fuzzer's. A
# finding replaces what an earlier run left in <build>/findings/<target>/.
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
  rm -rf "$build/findings/$target"
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

# The verdict: each failed target with the input that made it fail (libFuzzer names it crash-,
# leak-, timeout-, oom- or slow-unit- and a hash), or its log when it left none.
failures=()
for target in $targets; do
  grep -q FINDING "$work/$target/report" || continue
  input=log
  for file in "$build/findings/$target"/{crash,leak,timeout,oom,slow-unit}-*; do
    [ -e "$file" ] && input=${file##*/} && break
  done
  failures+=("$target (input: $build/findings/$target/$input)")
done
if [ ${#failures[@]} -eq 0 ]; then
  echo "fuzz: $count targets, $seconds s each, no crash"
else
  listed=$(printf '%s, ' "${failures[@]}")
  echo "fuzz: ${#failures[@]} of $count targets failed: ${listed%, }; replay one with $build/<target> INPUT"
fi
exit $findings
