#!/usr/bin/env bash
# Runs on the device machine, from the repository root: the GPU tests, the
# tests under compute-sanitizer (memcheck, racecheck), then engine_bench.
# Logs and JSON go to $OUT (or ./out). docs/gpu.md has the one-line call.
#
#   bash .device/device-run.sh [all|tests|bench] [engine_bench args...]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$PWD/out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
what=${1:-all}
shift || true
status=0
step() {  # step NAME LIMIT_S CMD...: runs, logs to $out/NAME.log, remembers a failure
  local name=$1 limit=$2
  shift 2
  echo "=== $name: $*"
  local t0=$SECONDS
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  tail -n 25 "$out/$name.log"
  echo "=== $name: exit $rc in $((SECONDS - t0)) s"
  [[ $rc -eq 0 ]] || status=1
}

nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader || true
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)

if [[ $what == all || $what == tests ]]; then
  step tests_engine 200 "$here/bin/engine_tests" --gtest_filter='*cuda*:*Cuda*'
  step tests_equivalence 200 "$here/bin/cuda_engine_tests"
  # DeviceErrorsBecomeStatus provokes a failed cudaMalloc on purpose, which
  # the sanitizer would count as an error; it runs in tests_equivalence.
  # Under the sanitizers the sequences are scaled down (GPHKV_TEST_SCALE): they
  # run every kernel, including Refinement with lock contention, at 1/20 length.
  step memcheck 200 env GPHKV_TEST_SCALE=0.05 "$sanitizer" --tool memcheck --leak-check full --error-exitcode 1 \
    "$here/bin/cuda_engine_tests" --gtest_filter='-*DeviceErrorsBecomeStatus*'
  step racecheck 200 env GPHKV_TEST_SCALE=0.05 "$sanitizer" --tool racecheck --error-exitcode 1 \
    "$here/bin/cuda_engine_tests" --gtest_filter='*Refinement*:*OneLargeBatch*:*CudaBulkBuild*DeviceArraysAgree*:*CudaLines*:-*OneKeyAtATime*'
fi
if [[ $what == all || $what == bench ]]; then
  step bench 500 "$here/bin/engine_bench" --json="$out/engine_bench.json" "$@"
fi
exit $status
