#!/usr/bin/env bash
# The test suite: set up and build everything, check every C++/CUDA file's layout against
# .clang-format, run every test (GPU tests without a GPU skip, each saying why), then a short
# fuzz run of every parser fuzz/ covers. Every step runs even when an earlier one failed; the
# last line counts the tests passed, failed and skipped with the reasons for skipping, and the
# exit status is non-zero when anything failed.
set -euo pipefail
ZT_FOR_TESTS=1
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh" all

failed_steps=()
echo "== checking the layout of every C++/CUDA file against .clang-format"
"$ZT_ROOT/scripts/check_format.sh" || failed_steps+=("layout check")

junit="$ZT_BUILD_DIR/ctest-junit.xml"
rm -f "$junit"
echo "== running $(ctest --test-dir "$ZT_BUILD_DIR" -N | sed -n 's/^Total Tests: //p') tests," \
  "$(nproc) at a time (ctest; about 10 minutes on 2 cores)"
ctest_status=0
ctest --test-dir "$ZT_BUILD_DIR" --output-on-failure -j "$(nproc)" --timeout 600 --output-junit "$junit" ||
  ctest_status=$?

"$ZT_ROOT/scripts/fuzz.sh" "${ZT_FUZZ_SECONDS:-20}" || failed_steps+=("fuzzing")

echo
summary_status=0
summary=$(python3 "$ZT_ROOT/scripts/test_summary.py" "$junit") || summary_status=$?
[ -n "$summary" ] || summary="tests: no results (scripts/test_summary.py exited with status $summary_status)"
# ctest failing with no failed test counted (killed, or no report): its status says more.
if [ "$ctest_status" -ne 0 ] && ! [[ "$summary" =~ ,\ [1-9][0-9]*\ failed ]]; then
  failed_steps+=("ctest (exit status $ctest_status)")
fi
if [ ${#failed_steps[@]} -gt 0 ]; then
  joined=$(printf '%s, ' "${failed_steps[@]}")
  summary+="; also failed: ${joined%, } (see above)"
fi
echo "$summary"
[ "$ctest_status" -eq 0 ] && [ "$summary_status" -eq 0 ] && [ ${#failed_steps[@]} -eq 0 ]
