#!/usr/bin/env bash
# The service's figures, all in one run on one host (the device machine: 16
# cores and a GPU), every figure beside the cores each side used:
#
#   1. gphkv (requests coalesced by gphkv::Client) against memcached (requests
#      pipelined on each connection), both presets: each store's threads
#      tuned, the closed-loop peak, and keys/s at 1, 4, 20, 100 and 1000 keys
#      per get (no search for the highest rate with p99 < 1 ms: its answer
#      moved with the host and the runs before it; paced load is the latency
#      ladder's, scripts/latency-ladder.sh, with LADDER=1 part 6 here);
#   2. one unary RPC per request: gphkv against bench/null_server (no table)
#      on the same completion-queue front end, threads tuned for both;
#   3. the transport's ceiling for gets that carry values: null_server with
#      190-byte values (the mean stored size of the default workload), coalesced,
#      at each size;
#   4. null_server on gRPC's callback API, the front end's ceiling before;
#   5. light load, 1000 requests/s open loop, for every store and API, and
#      gphkv's server-side metrics of those runs;
#   6. with LADDER=1, the latency ladder (scripts/latency-ladder.sh, its
#      knobs passed through) into OUT/ladder. It takes about 6 minutes by
#      itself, parts 1-5 about 5: together they exceed one device call's 10
#      minutes, so the ladder is usually its own call (its header has the
#      command).
#
# Run from the repository root on the device with the bundle of
# scripts/device-bundle-service.sh (BUNDLE, default .device-svc); everything
# lands in OUT (default build/service-suite), one folder per part, and
# OUT/suite.tgz holds it all (also copied to COPY_TO, when set: the device
# tool's $OUT). scripts/loadgen-compare.sh does parts 1-4. Back here, unpack
# suite.tgz and run scripts/service-suite-results.py on it: it writes the run
# into bench/results/ and redraws docs/keys-per-request.svg; then
# scripts/perf-tables.py rewrites the tables (bench/results/README.md: the index).
set -uo pipefail
cd "$(dirname "$0")/.."
B=${BUNDLE:-.device-svc}
OUT=${OUT:-build/service-suite}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$B/lib:$B/memcached/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GPHKV_SERVER=$B/bin/gphkv-server LOADGEN=$B/bin/gphkv-loadgen NULL_SERVER=$B/bin/null_server
export MEMCACHED=$B/memcached/usr/bin/memcached
export COMMIT=${COMMIT:-$(cat "$B/COMMIT" 2>/dev/null || echo unknown)}
export THREADS=${THREADS:-8} CONNECTIONS=${CONNECTIONS:-4} WARMUP_S=${WARMUP_S:-1} STEP_S=${STEP_S:-2.5}
export DRAIN_S=${DRAIN_S:-2} KEYS=${KEYS:-1000000} LOAD_EST_S=${LOAD_EST_S:-2} BACKEND=${BACKEND:-cuda}
nproc
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
t0=$SECONDS

echo "== 1. coalesced gphkv vs memcached"
TARGETS="gphkv memcached" API=coalesced WORKLOADS="default taobench-o" SIZES="1 4 20 100 1000" \
  SERVER_THREADS="4 8" GPHKV_THREADS_FLAG=--completion_threads PEAK_DEPTHS="16 128" DEPTH=128 \
  SEARCH=0 TAG=coalesced OUT="$OUT/coalesced" bash scripts/loadgen-compare.sh
echo "== 2. unary: gphkv vs the null server"
TARGETS="null gphkv" API=unary WORKLOADS=default SEARCH=0 SERVER_THREADS="2 4 8" PEAK_DEPTHS="4 16" \
  TAG=unary OUT="$OUT/unary" bash scripts/loadgen-compare.sh
echo "== 3. the transport with values: null_server --value_bytes=190, coalesced"
TARGETS=null API=coalesced WORKLOADS=default SEARCH=0 SIZES="1 4 20 100 1000" SERVER_THREADS=4 PEAK_DEPTHS=128 \
  NULL_ARGS=--value_bytes=190 TAG=null-values OUT="$OUT/null-values" bash scripts/loadgen-compare.sh
echo "== 4. null_server on the callback API"
TARGETS=null API=unary WORKLOADS=default SEARCH=0 SERVER_THREADS=4 PEAK_DEPTHS="4 16" NULL_ARGS=--api=callback \
  TAG=null-callback OUT="$OUT/null-callback" bash scripts/loadgen-compare.sh

echo "== 5. light load: 1000 requests/s, open loop"
light="$OUT/light"
mkdir -p "$light"
pid=""
stop() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=""; }
trap stop EXIT
light_run() {  # name target address api load [flags]
  "$LOADGEN" --target="$2" --address="$3" --api="$4" --load="$5" --keys="$KEYS" --mode=open --rate=1000 \
    --threads=2 --connections=2 --warmup=1 --duration="${LIGHT_S:-6}" --progress=false --server_pid="$pid" \
    --json="$light/$1.json" "${@:6}" >"$light/$1.txt" 2>&1
  echo "   $1: $(grep -E '^all' "$light/$1.txt" | cut -c1-110)"
}
"$GPHKV_SERVER" --backend="$BACKEND" --listen_address=127.0.0.1:50151 --metrics_address=127.0.0.1:50152 \
  >"$light/gphkv-server.log" 2>&1 &
pid=$!
light_run gphkv-coalesced gphkv 127.0.0.1:50151 coalesced true
light_run gphkv-unary gphkv 127.0.0.1:50151 unary false
curl -s 127.0.0.1:50152/metrics >"$light/gphkv-metrics.txt" || true
stop
"$MEMCACHED" -l 127.0.0.1 -p 50153 -U 0 -t 4 -m 2048 -c 4096 -u nobody >"$light/memcached.log" 2>&1 &
pid=$!
sleep 0.5
light_run memcached memcached 127.0.0.1:50153 unary true
stop
"$NULL_SERVER" --address=127.0.0.1:50154 --threads=4 >"$light/null.log" 2>&1 &
pid=$!
sleep 0.5
light_run null-coalesced gphkv 127.0.0.1:50154 coalesced false --check_reads=off  # it stores nothing
light_run null-unary gphkv 127.0.0.1:50154 unary false --check_reads=off
stop
if [ "${LADDER:-0}" = 1 ]; then
  echo "== 6. the latency ladder"
  # Its own client shape and run lengths, not the suite's (16 threads at least, issue 25).
  THREADS=${LADDER_THREADS:-16} CONNECTIONS=${LADDER_CONNECTIONS:-2} WARMUP_S=1 STEP_S=3 DRAIN_S=1 \
    OUT="$OUT/ladder" bash scripts/latency-ladder.sh
fi
echo "== suite took $((SECONDS - t0)) s"
tar czf "$OUT.tgz" -C "$OUT" . && mv "$OUT.tgz" "$OUT/suite.tgz"
[ -z "${COPY_TO:-}" ] || cp "$OUT/suite.tgz" "$COPY_TO/"
