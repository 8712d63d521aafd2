#!/usr/bin/env bash
# Everything GPU-related in one run, for a machine with an NVIDIA GPU: build, the whole test
# suite (GPU tests included), compute-sanitizer over the GPU tests, every benchmark, the
# safetensors round trip with Python's `safetensors`, and a summary table printed last.
# Logs go to ${OUT:-gpu-check-out}/ (at most 8 files).
# ZT_GPU_CHECK_STEPS picks phases (default all): build tests memcheck racecheck bench interop.
# The racecheck phase runs each kernel family's small-shape tests under compute-sanitizer's
# racecheck (shared-memory hazards), which is too slow for the large shapes.
set -uo pipefail

ZT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-$ZT_ROOT/gpu-check-out}
BUILD=${ZT_BUILD_DIR:-$ZT_ROOT/build-gpu}
mkdir -p "$OUT"
SUMMARY="$OUT/summary.md"
export NCCL_NVLS_ENABLE=0
echo "| step | result |" >"$SUMMARY"
echo "| --- | --- |" >>"$SUMMARY"

STEPS=${ZT_GPU_CHECK_STEPS:-build tests memcheck racecheck bench interop}
wants() { [[ " $STEPS " == *" $1 "* ]]; }

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
wants build && step configure "$OUT/build.log" cmake -S "$ZT_ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release ${ZT_CMAKE_ARGS:-}
wants build && { step build "$OUT/build.log" cmake --build "$BUILD" -j "$(nproc)" || { cat "$SUMMARY"; tail -50 "$OUT/build.log"; exit 1; }; }
"$BUILD/bin/zerotune" env >>"$OUT/env.txt" 2>&1

if wants tests; then
  # ZT_CTEST_ARGS="-L gpu" runs the GPU tests alone (the CPU ones run in CI).
  step "ctest ${ZT_CTEST_ARGS:-(cpu + gpu)}" "$OUT/tests.log" ctest --test-dir "$BUILD" --output-on-failure -j 8 \
    --timeout 600 ${ZT_CTEST_ARGS:-}
  grep -E "tests passed|Failed|\*\*\*" "$OUT/tests.log" | tail -20 >>"$SUMMARY.details"
  gpu_skips=$(grep -c "no CUDA GPU" "$OUT/tests.log" || true)
  echo "| gpu tests skipped for lack of a GPU | $gpu_skips (must be 0) |" >>"$SUMMARY"
fi

if wants memcheck && command -v compute-sanitizer >/dev/null; then
  for test in "$BUILD"/tests/*_gpu_test; do
    step "memcheck $(basename "$test")" "$OUT/sanitizer.log" \
      compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 "$test"
  done
fi

# test program : gtest filter of its small shapes
RACECHECK_TESTS=(
  "flash_attention_gpu_test:*Tiny*"
  "swiglu_gpu_test:*Misaligned*"
  "norm_gpu_test:*RmsNormMatchesCpuOnEveryKernelVariant*:*RopeInPlaceOnQAndKMatchesCpu*"
  "adamw_gpu_test:*Multi*:*L2NormMatchesCpuOverManyTensors*"
  "linear_cross_entropy_gpu_test:*AllIgnored*:*Int32Labels*"
  "decode_attention_gpu_test:*StridedAndMisaligned*:*LengthZero*:*WriteKvSlotsGpu.MatchesCpuExactly*"
)
if wants racecheck && command -v compute-sanitizer >/dev/null; then
  for entry in "${RACECHECK_TESTS[@]}"; do
    test=${entry%%:*}
    step "racecheck $test" "$OUT/sanitizer.log" timeout 60 compute-sanitizer --tool racecheck --racecheck-report hazard \
      --error-exitcode 9 "$BUILD/tests/$test" --gtest_filter="${entry#*:}"
  done
fi

if wants bench; then
  for bench in "$BUILD"/bench/*_bench; do
    step "bench $(basename "$bench")" "$OUT/bench.txt" "$bench" --benchmark_min_time=0.2s
  done
fi

if wants interop && [ -f "$ZT_ROOT/tools/safetensors_roundtrip.py" ]; then
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
