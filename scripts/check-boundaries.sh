#!/usr/bin/env bash
# Fails, naming each file and line, where a tracked C++ or CUDA file outside
# engine/ includes one of the engine's private headers ("engine/cuda/...",
# "engine/cpu/...", anything under engine/ but its public engine/include/) or
# names a backend's table class. Outside engine/ the engine is reached only
# through its public headers ("gphkv/engine/...", "gphkv/cuda/..."); the
# white-box test and benchmarks of the CUDA backend live in engine/tests/ and
# engine/bench/. The build enforces the same for include paths
# (cmake/IncludeRoots.cmake); this catches a target that links
# gphkv_engine_internals where it should not.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu' '*.cuh' | grep -v '^engine/')
bad=0
if grep -nE '#include +"engine/' "${files[@]}"; then
  echo "check-boundaries: the lines above include the engine's private headers from outside engine/" >&2
  bad=1
fi
if grep -nwE 'CudaTable|CpuTable' "${files[@]}"; then
  echo "check-boundaries: the lines above name a backend's table class from outside engine/" >&2
  bad=1
fi
exit $bad
