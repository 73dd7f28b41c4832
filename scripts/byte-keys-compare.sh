#!/usr/bin/env bash
# Byte keys against uint64 keys through the service (issue 26): the default
# workload (~20-key gets, Zipf) from gphkv-loadgen's coalescing client, once
# with --key_format=u64 and once with --key_format=bytes (KEY_LENGTH bytes),
# each against a fresh gphkv-server of its own, interleaved REPS times: a
# closed-loop peak (THREADS x CONNECTIONS x DEPTH) and a light open-loop
# load (LIGHT_RATE calls/s). memcached runs the same closed loop beside them
# (its keys are the ids as text). Servers on the first half of the cores,
# the load generator on the second half.
#
#   BUNDLE=.device-svc OUT=build/byte-keys bash scripts/byte-keys-compare.sh
# writes OUT/<format>-<kind>-<rep>.json (loadgen reports) and OUT/summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
B=${BUNDLE:-.device-svc}
export LD_LIBRARY_PATH="$B/lib:$B/memcached/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
OUT=${OUT:-build/byte-keys}
REPS=${REPS:-2} KEYS=${KEYS:-1000000} KEY_LENGTH=${KEY_LENGTH:-24}
THREADS=${THREADS:-8} CONNECTIONS=${CONNECTIONS:-4} DEPTH=${DEPTH:-128} DURATION=${DURATION:-4}
LIGHT_RATE=${LIGHT_RATE:-1000}
BACKEND=${BACKEND:-auto}
mkdir -p "$OUT"
cores=$(nproc)
half=$((cores / 2))
spin=(taskset -c "0-$((half - 1))") load=(taskset -c "$half-$((cores - 1))")
[ "$cores" -ge 4 ] || spin=() load=()
source scripts/lib/ports.sh  # free_port, wait_port
summary=$OUT/summary.txt
: >"$summary"

run_loadgen() {  # NAME ARGS...: one run, its report OUT/NAME.json, a line in the summary
  local name=$1
  shift
  "${load[@]}" "$B/bin/gphkv-loadgen" --progress=false --wait_ready=60 --keys="$KEYS" --json="$OUT/$name.json" "$@" \
    >"$OUT/$name.txt" 2>&1
  echo "$name: exit $? $(grep -E '^(get|all) ' "$OUT/$name.txt" | tail -1)" | tee -a "$summary"
}

for rep in $(seq 1 "$REPS"); do
  for format in u64 bytes; do
    port=$(free_port)
    "${spin[@]}" "$B/bin/gphkv-server" --backend="$BACKEND" --listen_address=127.0.0.1:"$port" --metrics_address= \
      >"$OUT/server-$format-$rep.log" 2>&1 &
    server=$!
    common=(--target=gphkv --api=coalesced --address=127.0.0.1:"$port" --key_format="$format"
            --key_length="$KEY_LENGTH" --server_pid="$server")
    run_loadgen "$format-peak-$rep" "${common[@]}" --threads="$THREADS" --connections="$CONNECTIONS" \
      --depth="$DEPTH" --warmup=1 --duration="$DURATION"
    run_loadgen "$format-light-$rep" "${common[@]}" --load=false --threads="$THREADS" \
      --connections="$CONNECTIONS" --mode=open --rate="$LIGHT_RATE" --warmup=1 --duration="$DURATION"
    kill "$server"
    wait "$server" 2>/dev/null
  done
  port=$(free_port)
  user=()
  [ "$(id -u)" -eq 0 ] && user=(-u nobody)
  "${spin[@]}" "$B/memcached/usr/bin/memcached" -l 127.0.0.1 -p "$port" -U 0 -t 4 -m 4096 -c 4096 "${user[@]}" &
  mc=$!
  run_loadgen "memcached-peak-$rep" --target=memcached --address=127.0.0.1:"$port" --server_pid="$mc" \
    --threads="$THREADS" --connections="$CONNECTIONS" --depth="$DEPTH" --warmup=1 --duration="$DURATION"
  kill "$mc"
  wait "$mc" 2>/dev/null
done
cat "$summary"
