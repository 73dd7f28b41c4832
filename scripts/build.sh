#!/usr/bin/env bash
# Configures and builds gphkv into build/ (CUDA backend included when nvcc is found).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" ${CMAKE_ARGS:-}
cmake --build build -j "$(nproc)"
