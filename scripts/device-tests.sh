#!/usr/bin/env bash
# Every GPU test on the device, with the sanitizers, from one bundle: the
# engine's tests (scripts/device-run.sh's steps), the server's CUDA store,
# value heap and service tests, compute-sanitizer memcheck over the engine's
# and the store's CUDA tests, racecheck over the Refinement-heavy ones, and
# engine_bench smoke runs. Each step's log goes to OUT/<step>.log, and
# OUT/device-tests.tgz holds them all (also copied to COPY_TO when set).
#
#   BUNDLE=.device-svc OUT=build/device-tests bash scripts/device-tests.sh
#
# STEPS (a regular expression over whole step names, default every step)
# runs some of them, e.g. STEPS='engine_.*|memcheck_engine|racecheck|bench_.*'
# for the engine's steps from scripts/device-bundle.sh's bundle alone; the
# others say "not selected".
#
# The bundle: scripts/device-bundle-service.sh with BUNDLE_TESTS=1, plus
# engine_tests, cuda_engine_tests and engine_bench from scripts/device-bundle.sh
# in its bin/ (docs/gpu.md).
set -uo pipefail
cd "$(dirname "$0")/.."
B=${BUNDLE:-.device-svc}
OUT=${OUT:-build/device-tests}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
status=0
step() {  # step NAME LIMIT_S CMD...
  local name=$1 limit=$2
  shift 2
  if ! [[ $name =~ ^(${STEPS:-.*})$ ]]; then
    echo "=== $name: not selected (STEPS=$STEPS)"
    return
  fi
  local t0=$SECONDS
  timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  echo "=== $name: exit $rc in $((SECONDS - t0)) s: $(grep -E '^\[  (PASSED|FAILED)  \]|ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$name.log" | tr '\n' ' ' | cut -c1-200)"
  [ $rc -eq 0 ] || { status=1; tail -n 15 "$OUT/$name.log"; }
}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
cat "$B/COMMIT" 2>/dev/null

step engine_cuda 300 "$B/bin/engine_tests" --gtest_filter='*cuda*:*Cuda*'
step engine_equivalence 300 "$B/bin/cuda_engine_tests"
step server_unit 300 "$B/bin/server_unit_tests"
# Prometheus's scrape needs Debian's prometheus, which CI installs and the device lacks.
step service 300 "$B/bin/service_tests" --gtest_filter='-*Prometheus*'
# DeviceErrorsBecomeStatus provokes a failed cudaMalloc on purpose, which the
# sanitizer would count; the sequences run at a twentieth of their length.
# The value heap's refill test (300,000 one-value puts) would take minutes
# under memcheck; the other heap tests make the same kernel calls. The byte
# keys' tests run the record-matching kernel (server/cuda/value_kernels.cu).
step memcheck_engine 300 env GPHKV_TEST_SCALE=0.05 "$san" --tool memcheck --leak-check full --error-exitcode 1 \
  "$B/bin/cuda_engine_tests" --gtest_filter='-*DeviceErrorsBecomeStatus*'
step memcheck_store 300 env GPHKV_TEST_SCALE=0.2 "$san" --tool memcheck --leak-check full --error-exitcode 1 \
  "$B/bin/server_unit_tests" \
  --gtest_filter='CudaStore*:DeviceValueHeap*:*ByteKeyStore*Cuda*:ByteKeyStoreAliasing*:-DeviceValueHeap.FreedMemoryServesValuesOfAnotherSize'
# CudaRefinementTest.OneKeyAtATime* runs each transaction alone (nothing to
# race with) in ~10^3 one-key inserts, which racecheck takes past 300 s; its
# batch test runs both Refinement kernels under contention here.
step racecheck 300 env GPHKV_TEST_SCALE=0.05 "$san" --tool racecheck --error-exitcode 1 \
  "$B/bin/cuda_engine_tests" \
  --gtest_filter='*Refinement*:*OneLargeBatch*:*CudaBulkBuild*DeviceArraysAgree*:-*OneKeyAtATime*'
step bench_smoke 300 "$B/bin/engine_bench" --keys=1e6 --reps=1 --sweep --json="$OUT/engine_bench_smoke.json"
step bench_build_smoke 300 "$B/bin/engine_bench" --sections=build,burst,rebuild_lookup --keys=1e6 --reps=1 \
  --json="$OUT/engine_bench_build_smoke.json"
tar czf "$OUT.tgz" -C "$OUT" . && mv "$OUT.tgz" "$OUT/device-tests.tgz"
[ -z "${COPY_TO:-}" ] || cp "$OUT/device-tests.tgz" "$COPY_TO/"
exit $status
