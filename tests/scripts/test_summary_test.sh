#!/usr/bin/env bash
# scripts/test_summary.py against the JUnit file this machine's ctest really writes: a small
# CMake project with a test of each outcome (passed; failed, timed out, crashed, never built;
# skipped by GoogleTest with a reason, by a skip code, disabled) gives one exact closing line
# and exit status 1; the same project with its passing and skipped tests alone gives 0.
#
#   tests/scripts/test_summary_test.sh SUMMARY_SCRIPT
set -euo pipefail
summary=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

write_project() {  # $1: folder, $2: "all" or "passing"
  mkdir -p "$1"
  cat >"$1/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.21)
project(outcomes NONE)
enable_testing()
add_test(NAME Suite.Passes COMMAND sh -c "echo fine")
add_test(NAME Gpu.Skips COMMAND sh -c "printf 'x_test.cpp:3: Skipped\nno CUDA GPU: no driver\n[  SKIPPED ] Gpu.Skips\n'")
add_test(NAME Gpu.AlsoSkips COMMAND sh -c "printf 'x_test.cpp:9: Skipped\nno CUDA GPU: no driver\n[  SKIPPED ] Gpu.AlsoSkips\n'")
set_tests_properties(Gpu.Skips Gpu.AlsoSkips PROPERTIES SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
add_test(NAME Cpu.SkipCode COMMAND sh -c "exit 77")
set_tests_properties(Cpu.SkipCode PROPERTIES SKIP_RETURN_CODE 77)
add_test(NAME Cpu.Disabled COMMAND true)
set_tests_properties(Cpu.Disabled PROPERTIES DISABLED TRUE)
if(WITH_FAILURES)
  add_test(NAME Suite.Fails COMMAND sh -c "exit 1")
  add_test(NAME Suite.NeverBuilt COMMAND ${CMAKE_BINARY_DIR}/no_such_program)
  add_test(NAME Suite.TimesOut COMMAND sleep 10)
  set_tests_properties(Suite.TimesOut PROPERTIES TIMEOUT 1)
  add_test(NAME Suite.Crashes COMMAND sh -c "kill -SEGV \$\$")
endif()
EOF
  cmake -S "$1" -B "$1/build" -DWITH_FAILURES=$([ "$2" = all ] && echo ON || echo OFF) >/dev/null
  ctest --test-dir "$1/build" --output-junit "$1/junit.xml" >/dev/null 2>&1 || true
}

# Runs the summary on $1's JUnit file; fails unless it prints $2 and exits with $3.
expect_line() {
  local line status=0
  line=$(python3 "$summary" "$1/junit.xml") || status=$?
  if [ "$line" != "$2" ] || [ "$status" -ne "$3" ]; then
    printf 'expected (exit %s): %s\ngot      (exit %s): %s\n' "$3" "$2" "$status" "$line" >&2
    return 1
  fi
}

write_project "$work/all" all
expect_line "$work/all" "tests: 1 passed, 4 failed (Suite.Fails, Suite.NeverBuilt, Suite.TimesOut, ...), 4 skipped\
 (2 because no CUDA GPU: no driver; 1 because the test exited with its skip code 77; 1 because disabled in CMake)" 1

write_project "$work/passing" passing
expect_line "$work/passing" "tests: 1 passed, 0 failed, 4 skipped (2 because no CUDA GPU: no driver;\
 1 because the test exited with its skip code 77; 1 because disabled in CMake)" 0

expect_line "$work/missing" "tests: no results: ctest's JUnit file $work/missing/junit.xml could not be read\
 ([Errno 2] No such file or directory: '$work/missing/junit.xml')" 1
echo "test_summary.py: all outcomes counted as expected"
