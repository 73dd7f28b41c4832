#!/usr/bin/env bash
# One server over two GPUs against one GPU and against two one-GPU servers
# (issue 30), on a two-GPU device host, in one call: closed loop through the
# coalescing client (THREADS x CONNECTIONS x DEPTH), the default workload's
# values, gets of each size in SIZES, the three shapes interleaved round by
# round (ROUNDS), each server's cores and the load generator's beside every
# figure (server cores from /proc over the load generator's run), and the
# servers' eight busiest threads of each run in OUT/threads.txt (cores, name/tid), and for
# one-server shapes the server's time per call by stage in each report, and
# each server's /metrics page before and after each run (OUT/TAG-metrics-PORT,
# -before and -after: the per-GPU executor waits and queues). BACKEND=cpu
# runs the same shapes with CPU partitions in place of GPUs.
#
#   BUNDLE=.device-svc OUT=build/gpus-scaling bash scripts/gpus-scaling.sh
#
# The bundle: scripts/device-bundle-service.sh. Back here:
#   python3 scripts/gpus-scaling-results.py OUT   (writes bench/results/gpus_scaling_<device>_<commit>.json)
set -uo pipefail
cd "$(dirname "$0")/.."
B=${BUNDLE:-.device-svc}
OUT=${OUT:-build/gpus-scaling}
THREADS=${THREADS:-12} CONNECTIONS=${CONNECTIONS:-4} DEPTH=${DEPTH:-64} KEYS=${KEYS:-4000000}
SIZES=${SIZES:-"16 100 1000"} ROUNDS=${ROUNDS:-2} WARMUP_S=${WARMUP_S:-1} STEP_S=${STEP_S:-4}
SHAPES=${SHAPES:-"one_gpu two_gpus two_servers"}
SERVER_ARGS=${SERVER_ARGS:-} LOADGEN_ARGS=${LOADGEN_ARGS:-}  # and SERVER_ENV: the servers' environment (NAME=VALUE ...)
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
server=$B/bin/gphkv-server loadgen=$B/bin/gphkv-loadgen
{
  echo "commit=$(cat "$B/COMMIT" 2>/dev/null || echo unknown)"
  echo "cpus=$(nproc)"
  echo "gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
  echo "gpus=$(nvidia-smi -L | wc -l)"
  echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "client=threads=$THREADS connections=$CONNECTIONS depth=$DEPTH keys=$KEYS warmup_s=$WARMUP_S step_s=$STEP_S"
} >"$OUT/config.txt"
cat "$OUT/config.txt"

pids=() ports=()
stop() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  pids=() ports=()
}
trap stop EXIT
cpu_ticks() {  # the servers' user + system clock ticks, all together
  local t=0
  for p in "${pids[@]}"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done
  echo $t
}
start() {  # start NAME GPUS PORT: one server in the background
  local where=(--backend=cuda --gpus="$2")
  # BACKEND=cpu: the CPU backend's partitions stand in for the GPUs (a check of the script anywhere).
  [ "${BACKEND:-cuda}" = cpu ] && where=(--backend=cpu --partitions=$(($(tr -cd , <<<"$2" | wc -c) + 1)))
  # Its metrics on PORT + 1000: each one-server run's report gives the server's time per call by stage.
  env ${SERVER_ENV:-} "$server" "${where[@]}" --listen_address=127.0.0.1:"$3" --metrics_address=127.0.0.1:$(($3 + 1000)) \
    --initial_capacity=$((KEYS * 3 / 2)) --memory=32GiB $SERVER_ARGS >"$OUT/$1-server-$3.log" 2>&1 &
  pids+=($!)
  ports+=($(($3 + 1000)))
}
thread_ticks() {  # every server thread: PID TID NAME TICKS (user + system)
  for p in "${pids[@]}"; do
    for t in /proc/"$p"/task/*; do
      awk -v pid="$p" -v tid="${t##*/}" '{ sub(/^[^(]*\(/, ""); name = $0; sub(/\).*/, "", name); sub(/^[^)]*\) /, "");
        print pid, tid, name, $12 + $13 }' "$t/stat" 2>/dev/null
    done
  done
}
busiest_threads() {  # busiest_threads BEFORE AFTER SECONDS: the 8 busiest threads over the run, in cores
  awk -v s="$3" -v hz="$(getconf CLK_TCK)" 'NR == FNR { before[$1 " " $2] = $4; next }
    { d = ($4 - before[$1 " " $2]) / hz / s; if (d > 0.01) printf "%.2f %s/%s\n", d, $3, $2 }' "$1" "$2" |
    sort -rn | head -8 | tr '\n' ' '
}
scrape() {  # scrape TAG: each server's /metrics page into OUT/TAG-metrics-PORT.txt (python3 or curl)
  local port
  for port in "${ports[@]}"; do
    if command -v python3 >/dev/null; then
      python3 -c "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$port/metrics', timeout=5).read().decode())" \
        >"$OUT/$1-metrics-$port.txt" 2>/dev/null
    else
      curl -s --max-time 5 "http://127.0.0.1:$port/metrics" >"$OUT/$1-metrics-$port.txt"
    fi
  done
}
run() {  # run TAG ADDRESS LOAD SIZE
  local t0 c0 c1 t1 stages=()
  # One server: its stages (--server_metrics; two servers would need one scrape each).
  [[ "$2" == *,* ]] || stages=(--server_metrics="${2%:*}:$((${2##*:} + 1000))")
  t0=$(date +%s.%N)
  c0=$(cpu_ticks)
  thread_ticks >"$OUT/.threads-before"
  scrape "$1-before"
  "$loadgen" --address="$2" --api=coalesced --keys="$KEYS" --load="$3" --wait_ready=60 --mode=closed \
    --threads="$THREADS" --connections="$CONNECTIONS" --depth="$DEPTH" --read_batch="$4" --write_fraction=0 \
    --warmup="$WARMUP_S" --duration="$STEP_S" --progress=false --check_reads=off --json="$OUT/$1.json" \
    "${stages[@]}" $LOADGEN_ARGS >"$OUT/$1.txt" 2>&1
  local rc=$?
  c1=$(cpu_ticks)
  t1=$(date +%s.%N)
  thread_ticks >"$OUT/.threads-after"
  scrape "$1-after"
  echo "$1 $(busiest_threads "$OUT/.threads-before" "$OUT/.threads-after" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')")" \
    >>"$OUT/threads.txt"
  awk -v tag="$1" -v rc=$rc -v t0="$t0" -v t1="$t1" -v c0="$c0" -v c1="$c1" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { printf "%s rc=%d wall_s=%.2f server_cores=%.2f\n", tag, rc, t1 - t0, (c1 - c0) / hz / (t1 - t0) }' |
    tee -a "$OUT/cores.txt"
}
for round in $(seq 1 "$ROUNDS"); do
  for shape in $SHAPES; do
    case $shape in
      one_gpu) start "$shape" 0 50301; addr=127.0.0.1:50301 ;;
      two_gpus) start "$shape" 0,1 50302; addr=127.0.0.1:50302 ;;
      two_servers)
        start "$shape" 0 50303
        start "$shape" 1 50304
        addr=127.0.0.1:50303,127.0.0.1:50304
        ;;
    esac
    run "$shape-load-r$round" "$addr" true 16  # fills the store; not a figure
    for size in $SIZES; do run "$shape-$size-r$round" "$addr" false "$size"; done
    stop
  done
done
tar czf "$OUT.tgz" -C "$OUT" . && mv "$OUT.tgz" "$OUT/gpus-scaling.tgz"
[ -z "${COPY_TO:-}" ] || cp "$OUT/gpus-scaling.tgz" "$COPY_TO/"
