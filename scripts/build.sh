#!/usr/bin/env bash
# Configures and builds gphkv into build/: every target, or those named.
#
#   scripts/build.sh                                    # everything: programs, tests, benchmarks
#   scripts/build.sh gphkv-server gphkv-loadgen gphkv   # these and what they link (scripts/run-demo.sh)
#
# The CUDA backend is built when nvcc is found (GPHKV_CUDA=AUTO), except that
# build/'s first configure on a machine with no visible GPU turns it off: the
# kernels could not run there, and they are most of a CUDA build's compile time.
# A configured build/ keeps its choice; CMAKE_ARGS (e.g. -DGPHKV_CUDA=ON) overrides.
set -euo pipefail
cd "$(dirname "$0")/.."
args=()
if [ ! -f build/CMakeCache.txt ] && [[ "${CMAKE_ARGS:-}" != *GPHKV_CUDA* ]] &&
  ! { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; }; then
  args+=(-DGPHKV_CUDA=OFF)
fi
# shellcheck disable=SC2086
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" "${args[@]}" ${CMAKE_ARGS:-}
cmake --build build -j "$(nproc)" ${1:+--target "$@"}
