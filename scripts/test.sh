#!/usr/bin/env bash
# The test suite: set up, build, check every C++/CUDA file's layout against .clang-format,
# run every CPU test (and GPU tests when a GPU is present; without one they skip and say
# why), then a short fuzz run of every parser.
set -euo pipefail
# In CI and without a GPU the kernels are compiled but never run: compute_80 PTX alone builds
# several times faster than the default set of four GPUs' machine code (README, Build options).
# ZT_CMAKE_ARGS naming ZT_CUDA_ARCHITECTURES overrides this.
if [[ "${ZT_CMAKE_ARGS:-}" != *ZT_CUDA_ARCHITECTURES* ]] && { [ "${CI:-}" = true ] || ! nvidia-smi -L >/dev/null 2>&1; }; then
  export ZT_CMAKE_ARGS="-DZT_CUDA_ARCHITECTURES=80-virtual ${ZT_CMAKE_ARGS:-}"
fi
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
"$ZT_ROOT/scripts/check_format.sh"
ctest --test-dir "$ZT_BUILD_DIR" --output-on-failure -j "$(nproc)" --timeout 600
"$ZT_ROOT/scripts/fuzz.sh" "${ZT_FUZZ_SECONDS:-20}"
