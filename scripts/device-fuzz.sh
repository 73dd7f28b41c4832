#!/usr/bin/env bash
# On the device machine (issue 13): the device value heap's tests, which must
# run there, not skip; 10^7 inputs of the request fuzzer in 16 processes; and
# the heap's tests under compute-sanitizer memcheck. From the bundle of
# scripts/device-bundle-fuzz.sh, which carries this script:
#
#   bash .device-fuzz/device-fuzz.sh        (carry .device-fuzz; logs to $OUT, else build/device-fuzz)
#
# FUZZ_RUNS (10^7) inputs in all, split over FUZZ_JOBS (16) processes on as
# many cores; each process stops after FUZZ_LIMIT_S (400) seconds at the
# latest, and the run fails unless every process did its share. A finding's
# input is left in OUT/findings/; OUT/fuzz-logs/ has each process's log and
# OUT/fuzz-corpus.tgz the inputs it found new coverage with.
set -uo pipefail
B=$(cd "${BUNDLE:-$(dirname "$0")}" && pwd)
[ -x "$B/bin/request_fuzzer" ] || { echo "device-fuzz: no bundle at $B (BUNDLE=...)" >&2; exit 2; }
OUT=${OUT:-build/device-fuzz}
mkdir -p "$OUT/findings" "$OUT/fuzz-logs"
OUT=$(cd "$OUT" && pwd)
jobs=${FUZZ_JOBS:-16}
per_job=$(( (${FUZZ_RUNS:-10000000} + jobs - 1) / jobs ))
limit=${FUZZ_LIMIT_S:-400}
export LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
status=0
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 || true
echo "bundle of $(cat "$B/COMMIT" 2>/dev/null), $(nproc) cores"

t0=$SECONDS
"$B/bin/server_unit_tests" --gtest_filter='DeviceValueHeap.*' >"$OUT/device_value_heap.log" 2>&1
rc=$?
if grep -q '^\[  SKIPPED \]' "$OUT/device_value_heap.log"; then rc=1; fi  # here a skip is a failure
echo "=== device_value_heap: exit $rc in $((SECONDS - t0)) s: $(grep -E '^\[  (PASSED|FAILED)  \]|^\[  SKIPPED \] [0-9]+ test' "$OUT/device_value_heap.log" | tr '\n' ' ')"
[ $rc -eq 0 ] || { status=1; tail -n 15 "$OUT/device_value_heap.log"; }

# The fuzzer as scripts/fuzz.sh runs it; each process logs to fuzz-N.log in
# its working folder, and new inputs go to corpus/ (the seeds are read only).
t0=$SECONDS
work=$(mktemp -d)
mkdir -p "$work/corpus"
(cd "$work" && ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  "$B/bin/request_fuzzer" -runs="$per_job" -jobs="$jobs" -workers="$jobs" -max_total_time="$limit" \
  -max_len=65536 -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$OUT/findings/" \
  corpus "$B/seeds" >"$OUT/fuzz.log" 2>&1)
rc=$?
cp "$work"/fuzz-*.log "$OUT/fuzz-logs/" 2>/dev/null
tar czf "$OUT/fuzz-corpus.tgz" -C "$work" corpus
rm -rf "$work"
# Each process that finished its share ends its log with "Done <per_job> runs in N second(s)".
done_jobs=$(cat "$OUT"/fuzz-logs/fuzz-*.log 2>/dev/null | grep -c "^Done $per_job runs")
inputs=$(cat "$OUT"/fuzz-logs/fuzz-*.log 2>/dev/null | awk '/^Done [0-9]+ runs/ {n += $2} END {print n + 0}')
findings=$(ls "$OUT/findings" | wc -l)
[ "$done_jobs" -eq "$jobs" ] && [ "$findings" -eq 0 ] || rc=1
echo "=== fuzz: exit $rc in $((SECONDS - t0)) s: $inputs inputs, $done_jobs of $jobs processes did their $per_job, $findings findings"
[ $rc -eq 0 ] || { status=1; tail -n 15 "$OUT/fuzz.log"; ls "$OUT/findings"; }

# Last, as the step a short device call can spare. The refill test's
# 300,000 one-value puts would take minutes under memcheck; the other heap
# tests make the same kernel calls (moves included).
memcheck_filter='DeviceValueHeap.*:-DeviceValueHeap.FreedMemoryServesValuesOfAnotherSize'
t0=$SECONDS
timeout 120 "$san" --tool memcheck --leak-check full --error-exitcode 1 \
  "$B/bin/server_unit_tests" --gtest_filter="$memcheck_filter" >"$OUT/memcheck_value_heap.log" 2>&1
rc=$?
echo "=== memcheck_value_heap: exit $rc in $((SECONDS - t0)) s: $(grep -E '^\[  (PASSED|FAILED)  \]|ERROR SUMMARY' "$OUT/memcheck_value_heap.log" | tr '\n' ' ')"
[ $rc -eq 0 ] || { status=1; tail -n 15 "$OUT/memcheck_value_heap.log"; }
exit $status
