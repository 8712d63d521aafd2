#!/usr/bin/env bash
# Installs the Debian packages the build needs (only those missing), then configures and
# builds into ${ZT_BUILD_DIR:-build} the targets named: `scripts/setup.sh [TARGET...]`,
# default `all` (the binary, the tests and the benchmarks). demo.sh sources it for the
# `zerotune` target alone, test.sh for `all` and the packages only the tests need. Each long
# step is announced before it starts.
set -euo pipefail

ZT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ZT_BUILD_DIR=${ZT_BUILD_DIR:-$ZT_ROOT/build}
ZT_BUILD_TARGETS=("${@:-all}")
ZT_PACKAGES=(cmake ninja-build ccache g++ pkg-config nlohmann-json3-dev libsentencepiece-dev libpcre2-dev libutf8proc-dev libgloo-dev libpng-dev zlib1g-dev libyaml-dev libcurl4-openssl-dev libssl-dev libcpp-httplib-dev nodejs
             googletest libgtest-dev libbenchmark-dev clang clang-format libclang-rt-dev python3)
# Debian's npm only where no npm came with the installed nodejs (NodeSource's nodejs carries
# its own and conflicts with Debian's).
command -v npm >/dev/null || ZT_PACKAGES+=(npm)
# What only the test suite needs: test.sh sets ZT_FOR_TESTS=1 before sourcing this (chromium:
# tests/serve/chat_page_test.cpp opens the chat page in it, headless).
[ "${ZT_FOR_TESTS:-}" = 1 ] && ZT_PACKAGES+=(chromium)

# Minutes a first build takes on 2 cores with nothing in ccache, measured with
# CCACHE_DISABLE=1 in a fresh folder, kernels as compute_80 PTX (README, Install).
declare -A ZT_FIRST_BUILD_MINUTES=([zerotune]=12 [all]=45)

install_missing_packages() {
  local missing=()
  for package in "${ZT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "error: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    sudo="sudo"
  fi
  echo "== installing ${#missing[@]} Debian packages (apt-get, a few minutes): ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
    { $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; }
}

find_cuda() {
  if ! command -v nvcc >/dev/null; then
    for candidate in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
      [ -x "$candidate/nvcc" ] && export PATH="$candidate:$PATH" && break
    done
  fi
  command -v nvcc >/dev/null || { echo "error: the CUDA toolkit (nvcc) was not found; install CUDA 12.8+ under /usr/local/cuda" >&2; exit 1; }
}

# The CUDA architectures are the CMake default (every GPU from A100 on) unless ZT_CMAKE_ARGS
# names them: -U drops a set an earlier run (scripts/test.sh without a GPU) left in the cache.
configure() {
  ZT_ARCHITECTURES="the default set, A100 to H200"
  [[ "${ZT_CMAKE_ARGS:-}" =~ ZT_CUDA_ARCHITECTURES=([^ ]+) ]] && ZT_ARCHITECTURES=${BASH_REMATCH[1]}
  echo "== configuring $ZT_BUILD_DIR (CMake + Ninja, ${ZT_BUILD_TYPE:-Release}, CUDA architectures:" \
    "$ZT_ARCHITECTURES${ZT_ARCHITECTURES_WHY:-})"
  cmake -S "$ZT_ROOT" -B "$ZT_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${ZT_BUILD_TYPE:-Release} \
    -UZT_CUDA_ARCHITECTURES ${ZT_CMAKE_ARGS:-} >/dev/null
}

# Says how much there is to do before doing it. A build folder holding none of the targets'
# object files is a first build, for which the measured time is given (measured for compute_80
# PTX; the default set compiles each kernel file for five targets instead). Ninja's dry run
# cannot count what is left here: CMake's check of globbed folders always looks out of date.
build() {
  local name="${ZT_BUILD_TARGETS[*]}" objects total compiled=0
  objects=$(ninja -C "$ZT_BUILD_DIR" -t commands "${ZT_BUILD_TARGETS[@]}" | grep -o ' -o [^ ]*\.o' | cut -c5- | sort -u)
  total=$(wc -w <<<"$objects")
  for object in $objects; do
    if [ -f "$ZT_BUILD_DIR/$object" ]; then compiled=$((compiled + 1)); fi
  done
  if [ "$compiled" -eq 0 ] && [ "$ZT_ARCHITECTURES" = 80-virtual ] && [ -n "${ZT_FIRST_BUILD_MINUTES[$name]:-}" ]; then
    echo "== building $name: $total files to compile (first build: about ${ZT_FIRST_BUILD_MINUTES[$name]} minutes on" \
      "2 cores, less on more; later builds reuse ccache)"
  elif [ "$compiled" -eq 0 ]; then
    echo "== building $name: $total files to compile (first build; later builds reuse ccache)"
  elif [ "$compiled" -lt "$total" ]; then
    echo "== building $name: $((total - compiled)) of $total files not compiled yet (ccache answers those it has seen)"
  else
    echo "== building $name: recompiling what changed since the last build"
  fi
  cmake --build "$ZT_BUILD_DIR" -j "$(nproc)" --target "${ZT_BUILD_TARGETS[@]}"
}

# Sourced by demo.sh and test.sh, in CI or without a GPU, the kernels are compiled but not run
# here: compute_80 PTX alone builds several times faster than the default set of four GPUs'
# machine code (README, Build options), and both scripts share one build folder. Run directly,
# setup.sh builds the default set, for copying the binary to GPU machines. ZT_CMAKE_ARGS
# naming ZT_CUDA_ARCHITECTURES overrides both.
if [[ "${BASH_SOURCE[0]}" != "$0" && "${ZT_CMAKE_ARGS:-}" != *ZT_CUDA_ARCHITECTURES* ]] &&
  { [ "${CI:-}" = true ] || ! nvidia-smi -L >/dev/null 2>&1; }; then
  ZT_CMAKE_ARGS="-DZT_CUDA_ARCHITECTURES=80-virtual ${ZT_CMAKE_ARGS:-}"
  ZT_ARCHITECTURES_WHY=", as $([ "${CI:-}" = true ] && echo "in CI" || echo "no GPU is here"): kernels compiled, not run"
fi
install_missing_packages
find_cuda
configure
build
