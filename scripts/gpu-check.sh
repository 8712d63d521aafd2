#!/usr/bin/env bash
# Everything GPU-related in one run, for a machine with an NVIDIA GPU: build, the whole test
# suite (GPU tests included), compute-sanitizer over the GPU tests, every benchmark, the
# safetensors round trip with Python's `safetensors`, and a summary table printed last.
# Logs go to ${OUT:-gpu-check-out}/ (at most 8 files).
set -uo pipefail

ZT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-$ZT_ROOT/gpu-check-out}
BUILD=${ZT_BUILD_DIR:-$ZT_ROOT/build-gpu}
mkdir -p "$OUT"
SUMMARY="$OUT/summary.md"
export NCCL_NVLS_ENABLE=0
echo "| step | result |" >"$SUMMARY"
echo "| --- | --- |" >>"$SUMMARY"

step() {  # step <name> <log> <command...>: runs, records pass/fail with the elapsed time
  local name=$1 log=$2 start rc
  shift 2
  start=$(date +%s)
  "$@" >>"$log" 2>&1
  rc=$?
  echo "| $name | $([ $rc -eq 0 ] && echo pass || echo "FAIL (rc $rc)") in $(($(date +%s) - start)) s |" >>"$SUMMARY"
  return $rc
}

nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv >"$OUT/env.txt" 2>&1
step configure "$OUT/build.log" cmake -S "$ZT_ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release ${ZT_CMAKE_ARGS:-}
step build "$OUT/build.log" cmake --build "$BUILD" -j "$(nproc)" || { cat "$SUMMARY"; tail -50 "$OUT/build.log"; exit 1; }
"$BUILD/bin/zerotune" env >>"$OUT/env.txt" 2>&1

step "ctest (cpu + gpu)" "$OUT/tests.log" ctest --test-dir "$BUILD" --output-on-failure -j 4 --timeout 600
grep -E "tests passed|Failed|\*\*\*" "$OUT/tests.log" | tail -20 >>"$SUMMARY.details"
gpu_skips=$(grep -c "no CUDA GPU" "$OUT/tests.log" || true)
echo "| gpu tests skipped for lack of a GPU | $gpu_skips (must be 0) |" >>"$SUMMARY"

if command -v compute-sanitizer >/dev/null; then
  for test in "$BUILD"/tests/*_gpu_test; do
    step "compute-sanitizer $(basename "$test")" "$OUT/sanitizer.log" \
      compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 "$test"
  done
fi

for bench in "$BUILD"/bench/*_bench; do
  step "bench $(basename "$bench")" "$OUT/bench.txt" "$bench" --benchmark_min_time=0.2s
done

if [ -f "$ZT_ROOT/tools/safetensors_roundtrip.py" ]; then
  step "safetensors round trip with Python" "$OUT/interop.log" \
    python3 "$ZT_ROOT/tools/safetensors_roundtrip.py" --dir "$(mktemp -d)" \
    --test-binary "$BUILD/tests/safetensors_interop_test"
fi

[ -f "$SUMMARY.details" ] && { echo; echo '```'; cat "$SUMMARY.details"; echo '```'; } >>"$SUMMARY" && rm -f "$SUMMARY.details"
echo
grep -E "^BM_|bytes_per_second" "$OUT/bench.txt" | head -40
echo
cat "$SUMMARY"
! grep -q FAIL "$SUMMARY"
