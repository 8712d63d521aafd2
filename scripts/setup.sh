#!/usr/bin/env bash
# Installs the Debian packages the build needs (only those missing), then configures and
# builds zerotune into ${ZT_BUILD_DIR:-build}. Sourced by demo.sh and test.sh.
set -euo pipefail

ZT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ZT_BUILD_DIR=${ZT_BUILD_DIR:-$ZT_ROOT/build}
ZT_PACKAGES=(cmake ninja-build ccache g++ pkg-config nlohmann-json3-dev libsentencepiece-dev libpcre2-dev libutf8proc-dev libgloo-dev libpng-dev zlib1g-dev libyaml-dev libcpp-httplib-dev nodejs npm
             googletest libgtest-dev libbenchmark-dev clang clang-format libclang-rt-dev python3)

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
  echo "== installing Debian packages: ${missing[*]}"
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
configure_and_build() {
  local jobs
  jobs=$(nproc)
  cmake -S "$ZT_ROOT" -B "$ZT_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${ZT_BUILD_TYPE:-Release} \
    -UZT_CUDA_ARCHITECTURES ${ZT_CMAKE_ARGS:-} >/dev/null
  cmake --build "$ZT_BUILD_DIR" -j "$jobs"
}

# Sourced by demo.sh and test.sh, in CI or without a GPU, the kernels are compiled but not run
# here: compute_80 PTX alone builds several times faster than the default set of four GPUs'
# machine code (README, Build options), and both scripts share one build folder. Run directly,
# setup.sh builds the default set, for copying the binary to GPU machines. ZT_CMAKE_ARGS
# naming ZT_CUDA_ARCHITECTURES overrides both.
if [[ "${BASH_SOURCE[0]}" != "$0" && "${ZT_CMAKE_ARGS:-}" != *ZT_CUDA_ARCHITECTURES* ]] &&
  { [ "${CI:-}" = true ] || ! nvidia-smi -L >/dev/null 2>&1; }; then
  ZT_CMAKE_ARGS="-DZT_CUDA_ARCHITECTURES=80-virtual ${ZT_CMAKE_ARGS:-}"
fi
install_missing_packages
find_cuda
configure_and_build
