#!/usr/bin/env bash
# The test suite: set up, build, check every C++/CUDA file's layout against .clang-format,
# run every CPU test (and GPU tests when a GPU is present; without one they skip and say
# why), then a short fuzz run of every parser.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
"$ZT_ROOT/scripts/check_format.sh"
ctest --test-dir "$ZT_BUILD_DIR" --output-on-failure -j "$(nproc)" --timeout 600
"$ZT_ROOT/scripts/fuzz.sh" "${ZT_FUZZ_SECONDS:-20}"
