#!/usr/bin/env bash
# The fixed, interleaved latency ladder (issue 25): every store under the same
# client at the same offered rates, open loop, the default workload.
#
#   a light-load block at LIGHT_RATE calls/s, then for each rung of RATES
#   (calls/s), REPS times: every store of STORES once, in order (rung r: each
#   store, then each store again, ...). Rungs that would end after MAX_S
#   seconds (default 540: one device call may run 600) are left out, and the
#   summary is written all the same.
#
# Each run reports p50/p90/p99/p99.9 (latency from the intended send time),
# the calls answered per second, the cores of the store (--server_pid) and of
# the client, and what the read check found. The client's shape is the same
# for every store: THREADS driver threads x CONNECTIONS connections each
# (CLIENTS=shared: the coalescing stores' threads share one gphkv::Client with
# CONNECTIONS streams; the others keep theirs), DEPTH calls of room a
# connection.
#
# The servers are started once each, all at once on their own ports, and
# loaded once; a store not being measured is idle (no load reaches it). With
# SERVER_CPUS and CLIENT_CPUS (taskset lists; default on a host of 16 cores
# or more: the first half for the servers, the second for the client), every
# server runs on the servers' cores and the load generator on the client's,
# so the two sides do not take each other's cores and the cores each used are
# its own.
#
# Stores: gphkv-coalesced, gphkv-unary (gphkv-server; --api=coalesced,
# unary), null-coalesced, null-unary (bench/null_server, no table: the
# client and transport's own cost), memcached; and over memcached's
# protocol (gphkv-loadgen --target=memcached, issue 28): gphkv-memcached
# (gphkv-server's memcached port, MC_THREADS loops, loaded through it: its
# keys are byte keys) and null-memcached (null_server's memcached port over
# no table, MC_THREADS loops).
#
# PEAK_DEPTH (empty: none) adds a closed-loop phase after the rungs: each
# store, REPS times interleaved, with PEAK_DEPTH calls outstanding a
# connection (phase "peak"); PEAK_ARGS are more gphkv-loadgen flags for it
# alone (e.g. --read_batch=1: one key a get). RATES="" runs no rung. BENCHMARK and RESULT_PREFIX name the summary
# (defaults: latency-ladder, latency_ladder): a ladder of other stores than
# the headline's is written under its own name. GPHKV_VARIANTS runs several
# gphkv-servers side by side, "NAME:FLAGS;NAME:FLAGS" (e.g.
# "default:;spin:--spin_us=50"): each variant's stores are named
# gphkv-coalesced@NAME and gphkv-unary@NAME ("default" keeps the plain names),
# so a change is measured before and after in one run, interleaved.
#
# On the device, from the bundle of scripts/device-bundle-service.sh:
#   BUNDLE=.device-svc OUT=build/ladder COPY_TO=$OUT bash scripts/latency-ladder.sh
# Here (CPU backend, a tiny ladder):
#   RATES="1000 3000" REPS=2 WARMUP_S=0.5 STEP_S=1 LIGHT_S=1 KEYS=20000 bash scripts/latency-ladder.sh
# PLAN_ONLY=1 prints the plan and stops. Writes OUT/runs/*.json (every run's
# loadgen report), OUT/runs.jsonl (their index) and, through
# scripts/latency-ladder-results.py, OUT/latency_ladder_<device>_<commit>.json;
# OUT/ladder.tgz holds it all (copied to COPY_TO when set).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

if [ -n "${BUNDLE:-}" ]; then
  export LD_LIBRARY_PATH="$BUNDLE/lib:$BUNDLE/memcached/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  GPHKV_SERVER=${GPHKV_SERVER:-$BUNDLE/bin/gphkv-server} LOADGEN=${LOADGEN:-$BUNDLE/bin/gphkv-loadgen}
  NULL_SERVER=${NULL_SERVER:-$BUNDLE/bin/null_server} MEMCACHED=${MEMCACHED:-$BUNDLE/memcached/usr/bin/memcached}
  COMMIT=${COMMIT:-$(cat "$BUNDLE/COMMIT" 2>/dev/null || echo unknown)}
fi
GPHKV_SERVER=${GPHKV_SERVER:-build/server/gphkv-server}
LOADGEN=${LOADGEN:-build/loadgen/gphkv-loadgen}
NULL_SERVER=${NULL_SERVER:-build/bench/null_server}
MEMCACHED=${MEMCACHED:-memcached}
COMMIT=${COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
RATES=${RATES-"10000 30000 100000 300000 1000000 3000000"}
REPS=${REPS:-2}
STORES=${STORES:-"gphkv-coalesced gphkv-unary null-coalesced null-unary memcached"}
GPHKV_VARIANTS=${GPHKV_VARIANTS:-"default:"}
THREADS=${THREADS:-16}
CONNECTIONS=${CONNECTIONS:-2}
CLIENTS=${CLIENTS:-per_thread}
DEPTH=${DEPTH:-128}
KEYS=${KEYS:-1000000}
WARMUP_S=${WARMUP_S:-1}
STEP_S=${STEP_S:-3}
DRAIN_S=${DRAIN_S:-1}          # a saturated rung gives up on its calls after this long
LIGHT_RATE=${LIGHT_RATE:-1000}
LIGHT_S=${LIGHT_S:-3}
CHECK_READS=${CHECK_READS:-auto}
BACKEND=${BACKEND:-auto}
GPHKV_ARGS=${GPHKV_ARGS:-}      # flags for every gphkv-server variant
MC_THREADS=${MC_THREADS:-4}     # loops of gphkv's and the null server's memcached ports
PEAK_DEPTH=${PEAK_DEPTH:-}
PEAK_S=${PEAK_S:-$STEP_S}
PEAK_ARGS=${PEAK_ARGS:-}
BENCHMARK=${BENCHMARK:-latency-ladder}
RESULT_PREFIX=${RESULT_PREFIX:-latency_ladder}
NULL_THREADS=${NULL_THREADS:-4}
MEMCACHED_THREADS=${MEMCACHED_THREADS:-4}
MEMCACHED_MB=${MEMCACHED_MB:-2048}
OUT=${OUT:-build/ladder}
MAX_S=${MAX_S:-540}
RUN_OVERHEAD_S=${RUN_OVERHEAD_S:-1.5}  # a run's start (16 key rings, 32 connections) and exit: an estimate
command -v python3 >/dev/null || { echo "latency-ladder: needs python3" >&2; exit 1; }
cores=$(nproc)
if [ -z "${SERVER_CPUS+x}" ] && [ -z "${CLIENT_CPUS+x}" ] && [ "$cores" -ge 16 ] && command -v taskset >/dev/null; then
  SERVER_CPUS="0-$((cores / 2 - 1))" CLIENT_CPUS="$((cores / 2))-$((cores - 1))"
fi
SERVER_CPUS=${SERVER_CPUS:-} CLIENT_CPUS=${CLIENT_CPUS:-}
pin() { [ -n "$1" ] && echo "taskset -c $1"; }
read -r -a server_pin <<<"$(pin "$SERVER_CPUS")"
read -r -a client_pin <<<"$(pin "$CLIENT_CPUS")"
read -r -a gphkv_args <<<"$GPHKV_ARGS"

# The stores, with the variants spelled out: "NAME" of each gphkv store per variant.
variant_names=() variant_flags=()
IFS=';' read -r -a specs <<<"$GPHKV_VARIANTS"
for spec in "${specs[@]}"; do
  [ -n "$spec" ] || continue
  variant_names+=("${spec%%:*}")
  variant_flags+=("${spec#*:}")
done
stores=()
for s in $STORES; do
  case "$s" in
    gphkv-*) for v in "${variant_names[@]}"; do stores+=("$s$([ "$v" = default ] || echo "@$v")"); done ;;
    null-coalesced | null-unary | null-memcached | memcached) stores+=("$s") ;;
    *) echo "latency-ladder: unknown store $s" >&2; exit 2 ;;
  esac
done

n_rates=$(wc -w <<<"$RATES")
plan=$(python3 -c "
runs, light = $n_rates * $REPS * ${#stores[@]}, $REPS * ${#stores[@]}
peaks = light if '$PEAK_DEPTH' else 0
per = $WARMUP_S + $STEP_S + $RUN_OVERHEAD_S
total = runs * per + light * ($WARMUP_S + $LIGHT_S + $RUN_OVERHEAD_S) + peaks * ($WARMUP_S + $PEAK_S + $RUN_OVERHEAD_S) + 15
runs += peaks
print(f'{runs + light} runs: about {total:.0f} s ({total / 60:.1f} min), at most {total + runs * $DRAIN_S:.0f} s if every drain times out')")
echo "latency-ladder: plan: $plan"
echo "   stores: ${stores[*]}; rates: $RATES calls/s, $REPS reps, then $LIGHT_RATE calls/s"
echo "   client: $THREADS threads x $CONNECTIONS connections ($CLIENTS clients), depth $DEPTH; cpus: servers ${SERVER_CPUS:-any}, client ${CLIENT_CPUS:-any}"
echo "   each run: ${WARMUP_S} s warm-up + ${STEP_S} s measured (light load: ${LIGHT_S} s), drain ${DRAIN_S} s"
[ "${PLAN_ONLY:-0}" = 1 ] && exit 0
for b in "$LOADGEN" "$NULL_SERVER" "$GPHKV_SERVER"; do
  [ -x "$b" ] || { echo "latency-ladder: $b not built" >&2; exit 1; }
done
if [ "$BACKEND" = auto ]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then BACKEND=cuda; else BACKEND=cpu; fi
fi
mkdir -p "$OUT/runs"
rm -f "$OUT"/runs/* "$OUT/runs.jsonl" "$OUT"/"$RESULT_PREFIX"_*.json
# What ran where, for the summary (the device's copy of the tree has no git, and back here no GPU).
{ nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | grep . || echo cpu; } >"$OUT/device.txt"
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $cores CPUs" >"$OUT/machine.txt"
t0=$SECONDS

source scripts/lib/ports.sh  # free_port, wait_port
pids=()
stop_all() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done; pids=(); }
trap stop_all EXIT
declare -A addr pid metrics mc_addr
start() {  # store-name port command...
  local name=$1 port=$2
  shift 2
  "${server_pin[@]}" "$@" >"$OUT/runs/server-$name.log" 2>&1 &
  pid[$name]=$!
  pids+=($!)
  addr[$name]=127.0.0.1:$port
}
for i in "${!variant_names[@]}"; do
  v=${variant_names[$i]}
  read -r -a vflags <<<"${variant_flags[$i]}"
  port=$(free_port)
  mport=$(free_port)
  # Its metrics endpoint: each run's report gives the server's time per call by stage (--server_metrics).
  metrics[gphkv@$v]=127.0.0.1:$mport
  mc_port=$(free_port)
  mc_addr[gphkv@$v]=127.0.0.1:$mc_port
  start "gphkv@$v" "$port" "$GPHKV_SERVER" --backend="$BACKEND" --listen_address=127.0.0.1:"$port" \
    --metrics_address=127.0.0.1:"$mport" --memcached_address=127.0.0.1:"$mc_port" --memcached_threads="$MC_THREADS" \
    --memcached_max_connections=4096 "${gphkv_args[@]}" "${vflags[@]}"
done
port=$(free_port)
mc_port=$(free_port)
mc_addr[null]=127.0.0.1:$mc_port
start null "$port" "$NULL_SERVER" --address=127.0.0.1:"$port" --threads="$NULL_THREADS" \
  --memcached_address=127.0.0.1:"$mc_port" --memcached_threads="$MC_THREADS"
if [[ " ${stores[*]} " == *" memcached "* ]]; then
  command -v "$MEMCACHED" >/dev/null || { echo "latency-ladder: $MEMCACHED not installed" >&2; exit 1; }
  user=()
  [ "$(id -u)" -eq 0 ] && user=(-u nobody)
  port=$(free_port)
  start memcached "$port" "$MEMCACHED" -l 127.0.0.1 -p "$port" -U 0 -t "$MEMCACHED_THREADS" -m "$MEMCACHED_MB" -c 4096 "${user[@]}"
fi
server_of() {  # store -> the server process it talks to
  case "$1" in
    gphkv-*@*) echo "gphkv@${1#*@}" ;;
    gphkv-*) echo "gphkv@default" ;;
    null-*) echo null ;;
    memcached) echo memcached ;;
  esac
}

# run NAME STORE RATE DURATION [flags...]: one open-loop run; its report is runs/NAME.json.
run() {
  local name=$1 store=$2 rate=$3 duration=$4
  shift 4
  local server
  server=$(server_of "$store")
  local address=${addr[$server]}
  case "$store" in *-memcached*) address=${mc_addr[$server]} ;; esac
  local args=(--address="$address" --keys="$KEYS" --threads="$THREADS" --connections="$CONNECTIONS"
              --depth="$DEPTH" --progress=false --wait_ready=60 --server_pid="${pid[$server]}"
              --json="$OUT/runs/$name.json")
  case "$store" in
    gphkv-coalesced* | null-coalesced) args+=(--target=gphkv --api=coalesced --clients="$CLIENTS") ;;&
    gphkv-*) args+=(--server_metrics="${metrics[$server]}") ;;&
    gphkv-unary* | null-unary) args+=(--target=gphkv --api=unary) ;;
    memcached | *-memcached*) args+=(--target=memcached) ;;
  esac
  # The null server stores nothing: a read check would only say so.
  case "$store" in null-*) args+=(--check_reads=off) ;; *) args+=(--check_reads="$CHECK_READS") ;; esac
  case "$rate" in
    load) ;;
    closed) args+=(--mode=closed --warmup="$WARMUP_S" --duration="$duration" --load=false) ;;
    *) args+=(--mode=open --rate="$rate" --warmup="$WARMUP_S" --duration="$duration" --drain_timeout="$DRAIN_S"
              --load=false) ;;
  esac
  local bound
  bound=$(python3 -c "print(int($WARMUP_S + $duration + $DRAIN_S + 90))")
  timeout "$bound" "${client_pin[@]}" "$LOADGEN" "${args[@]}" "$@" >"$OUT/runs/$name.txt" 2>&1
  local rc=$?
  # 4: the read check found violations; the report is still whole.
  if [ ! -f "$OUT/runs/$name.json" ]; then
    echo "   $name: no report (exit $rc): $(tail -1 "$OUT/runs/$name.txt")" >&2
    return 1
  fi
  return 0
}
summary() {  # NAME: one line of the run's figures
  python3 - "$OUT/runs/$1.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
o, cpu, rc = r["results"]["overall"], r["results"]["cpu"], r["results"]["read_check"]
lat = o["latency"]
served = (o["calls"] - o["errors"]) / r["results"]["seconds"] if r["results"]["seconds"] else 0
server = "-" if cpu["server_cores"] is None else f"{cpu['server_cores']:.2f}"
print(f"served {served:,.0f}/s p50 {lat['p50_us']:,.0f} p99 {lat['p99_us']:,.0f} p99.9 {lat['p999_us']:,.0f} us; "
      f"cores server {server} client {cpu['loadgen_cores']:.2f}; errors {o['errors']}; read violations {rc['violations']}")
EOF
}

# The load: every storing server once (the null server keeps nothing).
# A gphkv-server is loaded through gRPC for its gRPC stores and through its
# memcached port for gphkv-memcached (byte keys: the two key spaces differ).
loads=()
for server in "${!addr[@]}"; do
  case "$server" in
    gphkv@*)
      suffix=""; [ "$server" = gphkv@default ] || suffix="@${server#*@}"
      for s in "${stores[@]}"; do
        case "$s" in gphkv-memcached*) loads+=("$server gphkv-memcached$suffix mc") ;; esac
      done
      grpc_store=' gphkv-(coalesced|unary)'
      [[ " ${stores[*]} " =~ $grpc_store ]] && loads+=("$server gphkv-unary$suffix grpc")
      ;;
    memcached) [[ " ${stores[*]} " == *" memcached "* ]] && loads+=("memcached memcached mc") ;;
  esac
done
for l in "${loads[@]}"; do
  read -r server store via <<<"$l"
  name="load-${server/@/-}-$via"
  if run "$name" "$store" load 0 --load=true --mode=closed --warmup=0 --duration=0.2 --depth=4; then
    echo "   loaded $server ($via): $(python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['load']; print(f\"{r['keys']} keys in {r['seconds']:.1f} s, {r['errors']} errors\")" "$OUT/runs/$name.json")"
  fi
done

index() {  # phase offered store rep name
  printf '{"phase": "%s", "offered": %s, "store": "%s", "rep": %s, "name": "%s"}\n' "$@" >>"$OUT/runs.jsonl"
}
# Light load first: it is short, and the time guard below cuts rungs, never it.
echo "== light load: $LIGHT_RATE calls/s"
for rep in $(seq 1 "$REPS"); do
  for store in "${stores[@]}"; do
    name="light-${store/@/-}-r$rep"
    if run "$name" "$store" "$LIGHT_RATE" "$LIGHT_S"; then
      index light "$LIGHT_RATE" "$store" "$rep" "$name"
      echo "   $store rep $rep: $(summary "$name")"
    fi
  done
done
started=$SECONDS
for rate in $RATES; do
  # A rung is all its runs or none: stop before one that would not end in time.
  rung_s=$(python3 -c "print(int(${#stores[@]} * $REPS * ($WARMUP_S + $STEP_S + $DRAIN_S + $RUN_OVERHEAD_S)))")
  if [ $((SECONDS - t0 + rung_s)) -gt "$MAX_S" ]; then
    echo "== $rate calls/s and above: left out, $((SECONDS - t0)) s gone of MAX_S=$MAX_S (a rung takes up to $rung_s s)"
    break
  fi
  echo "== $rate calls/s"
  for rep in $(seq 1 "$REPS"); do
    for store in "${stores[@]}"; do
      name="rung-$rate-${store/@/-}-r$rep"
      if run "$name" "$store" "$rate" "$STEP_S"; then
        index rung "$rate" "$store" "$rep" "$name"
        echo "   $store rep $rep: $(summary "$name")"
      fi
    done
  done
done
echo "   rungs: $((SECONDS - started)) s for $(grep -c '"rung"' "$OUT/runs.jsonl" 2>/dev/null || true) runs"
peak_s=$(python3 -c "print(int(${#stores[@]} * $REPS * ($WARMUP_S + $PEAK_S + $RUN_OVERHEAD_S)))")
if [ -n "$PEAK_DEPTH" ] && [ $((SECONDS - t0 + peak_s)) -gt "$MAX_S" ]; then
  echo "== closed loop: left out, $((SECONDS - t0)) s gone of MAX_S=$MAX_S (it takes about $peak_s s)"
elif [ -n "$PEAK_DEPTH" ]; then
  echo "== closed loop, depth $PEAK_DEPTH"
  for rep in $(seq 1 "$REPS"); do
    for store in "${stores[@]}"; do
      name="peak-${store/@/-}-r$rep"
      # shellcheck disable=SC2086  # PEAK_ARGS: flags, split on spaces
      if run "$name" "$store" closed "$PEAK_S" --depth="$PEAK_DEPTH" $PEAK_ARGS; then
        index peak 0 "$store" "$rep" "$name"
        echo "   $store rep $rep: $(summary "$name")"
      fi
    done
  done
fi
stop_all
elapsed=$((SECONDS - t0))
echo "latency-ladder: took $elapsed s (plan: $plan)"

settings="RATES=\"$RATES\" REPS=$REPS STORES=\"$STORES\" GPHKV_VARIANTS=\"$GPHKV_VARIANTS\" THREADS=$THREADS CONNECTIONS=$CONNECTIONS CLIENTS=$CLIENTS DEPTH=$DEPTH KEYS=$KEYS WARMUP_S=$WARMUP_S STEP_S=$STEP_S DRAIN_S=$DRAIN_S LIGHT_RATE=$LIGHT_RATE LIGHT_S=$LIGHT_S CHECK_READS=$CHECK_READS BACKEND=$BACKEND MC_THREADS=$MC_THREADS${PEAK_DEPTH:+ PEAK_DEPTH=$PEAK_DEPTH PEAK_S=$PEAK_S}${PEAK_ARGS:+ PEAK_ARGS=\"$PEAK_ARGS\"} BENCHMARK=$BENCHMARK RESULT_PREFIX=$RESULT_PREFIX SERVER_CPUS=${SERVER_CPUS:-any} CLIENT_CPUS=${CLIENT_CPUS:-any} NULL_THREADS=$NULL_THREADS MEMCACHED_THREADS=$MEMCACHED_THREADS${GPHKV_ARGS:+ GPHKV_ARGS=\"$GPHKV_ARGS\"}"
# Beside the runs, so that the summary can be made again from OUT alone.
echo "$COMMIT" >"$OUT/COMMIT"
echo "$settings bash scripts/latency-ladder.sh" >"$OUT/command.txt"
echo "$elapsed" >"$OUT/elapsed_s.txt"
echo "$GPHKV_VARIANTS" >"$OUT/variants.txt"
python3 scripts/latency-ladder-results.py "$OUT" --out "$OUT" --benchmark "$BENCHMARK" --prefix "$RESULT_PREFIX" || exit 1
tar czf "$OUT.tgz" -C "$OUT" . && mv "$OUT.tgz" "$OUT/ladder.tgz"
[ -z "${COPY_TO:-}" ] || cp "$OUT/ladder.tgz" "$OUT"/"$RESULT_PREFIX"_*.json "$COPY_TO/"
