#!/usr/bin/env bash
# Everything GPU-related in one run, for a machine with an NVIDIA GPU: build, the whole test
# suite (GPU tests included), compute-sanitizer over the GPU tests, every benchmark, the
# safetensors round trip with Python's `safetensors`, and a summary table printed last.
# Logs go to ${OUT:-gpu-check-out}/ (at most 8 files).
# ZT_GPU_CHECK_STEPS picks phases (default all but ptx80): build tests memcheck racecheck bench
# interop, and ptx80 (below).
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
  "hopper_attention_gpu_test:*Tiny*"
  "swiglu_gpu_test:*Misaligned*"
  "norm_gpu_test:*RmsNormMatchesCpuOnEveryKernelVariant*:*RopeInPlaceOnQAndKMatchesCpu*"
  "adamw_gpu_test:*Multi*:*L2NormMatchesCpuOverManyTensors*"
  "linear_cross_entropy_gpu_test:*AllIgnored*:*Int32Labels*"
  "decode_attention_gpu_test:*StridedAndMisaligned*:*LengthZero*:*WriteKvSlotsGpu.MatchesCpuExactly*"
  "persistent_decode_gpu_test:*StageMarksAreRecordedInOrder*"
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

# ptx80: zerotune built as compute_80 PTX alone (-DZT_CUDA_ARCHITECTURES=80-virtual), which
# the driver compiles for this GPU when a program loads, as it does for a GPU newer than the
# build knows; the kernels take their pre-Hopper paths (__CUDA_ARCH__ 800). In its own build
# folder: the GPU tests, then the demo's training (scripts/demo.sh) and its question. One log.
if wants ptx80; then
  ptx_build=${ZT_PTX80_BUILD_DIR:-$BUILD-ptx80}
  ptx_log="$OUT/ptx80.log"
  demo_out="$ptx_build/demo-output"
  export CUDA_CACHE_MAXSIZE=4294967296  # every JIT-compiled kernel stays cached for the next test program
  step "ptx80 configure" "$ptx_log" cmake -S "$ZT_ROOT" -B "$ptx_build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DZT_BUILD_BENCH=OFF ${ZT_CMAKE_ARGS:-} -DZT_CUDA_ARCHITECTURES=80-virtual &&
    step "ptx80 build" "$ptx_log" cmake --build "$ptx_build" -j "$(nproc)" &&
    {
      step "ptx80 ctest -L gpu" "$ptx_log" ctest --test-dir "$ptx_build" -L gpu --output-on-failure -j 8 --timeout 900
      step "ptx80 demo training" "$ptx_log" "$ptx_build/bin/zerotune" train --bf16 \
        --deepspeed "$ZT_ROOT/examples/ds_config_zero2.json" --model_name_or_path "$ZT_ROOT/examples/tiny-qwen" \
        --train_file "$ZT_ROOT/examples/data/alpaca_demo.json" --output_dir "$demo_out" --overwrite_output_dir \
        --finetuning_type full --template qwen --max_steps 200 --per_device_train_batch_size 4 \
        --learning_rate 5e-3 --lr_scheduler_type constant_with_warmup --warmup_steps 5 --logging_steps 25 --save_steps 1000
      step "ptx80 demo answer" "$ptx_log" "$ptx_build/bin/zerotune" generate --model_name_or_path "$demo_out" \
        --max_new_tokens 20 --template qwen --prompt $'Spell out the digits.\n0 4'
      echo "| ptx80 demo answer (expected: zero four) | $(tail -1 "$ptx_log") |" >>"$SUMMARY"
    }
fi

[ -f "$SUMMARY.details" ] && { echo; echo '```'; cat "$SUMMARY.details"; echo '```'; } >>"$SUMMARY" && rm -f "$SUMMARY.details"
echo
grep -E "^BM_|bytes_per_second" "$OUT/bench.txt" | head -40
echo
cat "$SUMMARY"
! grep -q FAIL "$SUMMARY"
