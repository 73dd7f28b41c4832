#!/usr/bin/env bash
# gphkv vs memcached (and optionally bench/null_server, the front end's
# ceiling), same machine, same client, one command whose runtime is planned
# and printed before it starts. For each store:
#
#   1. its thread count: each of SERVER_THREADS (gphkv-server --grpc_threads,
#      memcached -t, null_server --threads) is loaded and run closed-loop at
#      depth TUNE_DEPTH; the best is kept and recorded;
#   2. for each preset of WORKLOADS: the closed-loop peak (best of a sweep of
#      PEAK_DEPTHS), then the highest open-loop rate whose p99 stays under
#      P99_LIMIT_US with no errors: a bisection on a log scale between
#      peak/50 and 1.2 x peak, each step run REPEATS times (PASS_RULE=all:
#      every run must pass; median: the median p99 must), and the best passing
#      rate confirmed by a further run (if it fails, the next passing rate
#      below it, up to CONFIRM_TRIES runs in all);
#   3. with SIZES (e.g. "1 4 20 100 1000"): a closed-loop run at each number of
#      keys per get (--read_batch=N, writes as the default workload's).
#
# Every run reports the cores the load generator used and, through
# /proc/PID/stat, the cores the store used; both stand beside every figure.
# Writes OUT/loadgen_compare_TAG_STAMP.{md,json} (the table and everything
# behind it; OUT/results.{md,json} are copies of the latest), OUT/runs/ (every
# run's full report) and plots in DOCS (default OUT): loadgen-compare-PRESET.svg
# (p99 against achieved keys/s), loadgen-sizes.svg (keys/s against keys per
# request, log-log), loadgen-STORE-PRESET.svg (the confirmation run over
# time). Without gnuplot the .gp and .dat files are written for drawing later.
#
#   scripts/loadgen-compare.sh                                  # both stores, default workload
#   WORKLOADS="default taobench-o" SIZES="1 4 20 100 1000" scripts/loadgen-compare.sh
#   TARGETS="null gphkv" API=pipeline scripts/loadgen-compare.sh
#   PLAN_ONLY=1 ... scripts/loadgen-compare.sh                 # print the plan and stop
#
# Knobs (environment; defaults in brackets below): the stores and the
# workload (TARGETS, WORKLOADS or WORKLOAD, API, KEYS, SIZES, SEARCH), the
# client (THREADS, CONNECTIONS, DEPTH, PEAK_DEPTHS, TUNE_DEPTH, SIZES_DEPTH,
# SPIN_US, SEED), the servers (SERVER_THREADS, BACKEND, MEMCACHED_MB,
# GPHKV_THREADS_FLAG, GPHKV_ARGS, NULL_ARGS), time (WARMUP_S, STEP_S, STEPS, REPEATS, PASS_RULE,
# CONFIRM_TRIES, DRAIN_S, and the planning estimates LOAD_EST_S, START_EST_S,
# RUN_OVERHEAD_S), the bound (P99_LIMIT_US), paths (GPHKV_SERVER, NULL_SERVER,
# MEMCACHED, LOADGEN, OUT, DOCS), labels (TAG, COMMIT), and PRIO, a command
# prefix for the stores and the client on a machine shared with other work
# (e.g. PRIO="chrt -f 5": real-time FIFO priority, root only).
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=${TARGETS:-"gphkv memcached"}      # gphkv, memcached, null (bench/null_server: gphkv's protocol, no table)
WORKLOADS=${WORKLOADS:-${WORKLOAD:-default}}  # gphkv-loadgen --workload presets, in order
API=${API:-unary}                          # gphkv and null: unary | pipeline | coalesced
SIZES=${SIZES:-}                           # keys per get for the closed-loop sweep; empty: no sweep
SEARCH=${SEARCH:-1}                        # 0: peaks only, no open-loop search
THREADS=${THREADS:-2}                      # client threads
CONNECTIONS=${CONNECTIONS:-2}              # per client thread
DEPTH=${DEPTH:-16}                         # open loop: room for calls per connection
PEAK_DEPTHS=${PEAK_DEPTHS:-"1 4 16"}       # closed loop: the peak is the best of these
TUNE_DEPTH=${TUNE_DEPTH:-4}                # closed loop depth while choosing the server's threads
SIZES_DEPTH=${SIZES_DEPTH:-}               # closed loop depth of the sizes sweep (empty: the default preset's peak depth, else 4)
SERVER_THREADS=${SERVER_THREADS:-"2 4 8"}  # tried for every store; one value: no tuning runs
KEYS=${KEYS:-1000000}
WARMUP_S=${WARMUP_S:-1}                    # every run: seconds before measuring
STEP_S=${STEP_S:-3}                        # every run: seconds measured
STEPS=${STEPS:-5}                          # open-loop search steps
REPEATS=${REPEATS:-2}                      # runs per step
PASS_RULE=${PASS_RULE:-all}                # all | median
CONFIRM_TRIES=${CONFIRM_TRIES:-2}          # confirmation runs, at most
DRAIN_S=${DRAIN_S:-2}                      # every run: how long calls in flight may finish after the window
P99_LIMIT_US=${P99_LIMIT_US:-1000}
BACKEND=${BACKEND:-auto}
MEMCACHED_MB=${MEMCACHED_MB:-2048}
GPHKV_THREADS_FLAG=${GPHKV_THREADS_FLAG:---grpc_threads}
LOAD_EST_S=${LOAD_EST_S:-5}                # planning only: seconds one load of KEYS items takes
START_EST_S=${START_EST_S:-1}              # planning only: a store's start and stop
RUN_OVERHEAD_S=${RUN_OVERHEAD_S:-1}        # planning only: a run's connect, drain and exit
OUT=${OUT:-build/loadgen-compare}
DOCS=${DOCS:-$OUT}
GPHKV_SERVER=${GPHKV_SERVER:-build/server/gphkv-server}
NULL_SERVER=${NULL_SERVER:-build/bench/null_server}
MEMCACHED=${MEMCACHED:-memcached}
LOADGEN=${LOADGEN:-build/loadgen/gphkv-loadgen}
SEED=${SEED:-1}
SPIN_US=${SPIN_US:-0}                      # open loop: busy-poll before due sends (50 on a dedicated many-core client)
read -r -a prio <<<"${PRIO:-}"
read -r -a gphkv_args <<<"${GPHKV_ARGS:-}"  # more gphkv-server flags
read -r -a null_args <<<"${NULL_ARGS:-}"    # more null_server flags (e.g. --value_bytes=190)

command -v python3 >/dev/null || { echo "loadgen-compare: needs python3 to read the JSON reports" >&2; exit 1; }
case "$PASS_RULE" in all | median) ;; *) echo "loadgen-compare: PASS_RULE must be all or median" >&2; exit 2 ;; esac
count() { wc -w <<<"$1" | tr -d ' '; }
py() { python3 -c "$@"; }

# The plan: every run is WARMUP_S + STEP_S + RUN_OVERHEAD_S; a load adds
# LOAD_EST_S; a drain that times out adds DRAIN_S (the worst case).
plan=$(py "
targets, workloads, sizes = '$TARGETS'.split(), '$WORKLOADS'.split(), '$SIZES'.split()
run, load, start = $WARMUP_S + $STEP_S + $RUN_OVERHEAD_S, $LOAD_EST_S, $START_EST_S
threads = len('$SERVER_THREADS'.split())
runs = loads = starts = 0
for t in targets:
    stores = t != 'null'  # null_server keeps nothing: no load
    if threads > 1: runs += threads; loads += threads * stores; starts += threads
    starts += 1
    for w in workloads:
        loads += stores; runs += len('$PEAK_DEPTHS'.split())
        if $SEARCH and stores: runs += $STEPS * $REPEATS + $CONFIRM_TRIES
    if sizes: loads += stores; runs += len(sizes)
total = runs * run + loads * load + starts * start
print(f'{runs} runs, {loads} loads, {starts} starts: about {total:.0f} s ({total/60:.1f} min), '
      f'at most {total + runs * $DRAIN_S:.0f} s if every drain times out')
")
echo "loadgen-compare: plan: $plan"
echo "   targets: $TARGETS; workloads: $WORKLOADS; api: $API; sizes: ${SIZES:-none}; server threads tried: $SERVER_THREADS"
echo "   each run: ${WARMUP_S} s warm-up + ${STEP_S} s measured; search: $([ "$SEARCH" = 1 ] &&
  echo "$STEPS steps x $REPEATS runs ($PASS_RULE must pass p99 < $P99_LIMIT_US us)" || echo off)"
[ "${PLAN_ONLY:-0}" = 1 ] && exit 0
t_begin=$SECONDS

[ -x "$LOADGEN" ] || { echo "loadgen-compare: $LOADGEN not built (scripts/build.sh)" >&2; exit 1; }
if [ "$BACKEND" = auto ]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then BACKEND=cuda; else BACKEND=cpu; fi
fi
mkdir -p "$OUT/runs" "$DOCS"
rm -f "$OUT"/runs/*.json "$OUT/runs.jsonl"  # this run's reports only

free_port() { py 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
server_pid=""
stop_server() { if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; server_pid=""; fi; }
trap stop_server EXIT

start_server() {  # store port threads
  local log="$OUT/runs/$1-server.log"
  case "$1" in
    gphkv)
      [ -x "$GPHKV_SERVER" ] || { echo "loadgen-compare: $GPHKV_SERVER not built" >&2; return 1; }
      "${prio[@]}" "$GPHKV_SERVER" --listen_address=127.0.0.1:"$2" --metrics_address= --backend="$BACKEND" \
        "$GPHKV_THREADS_FLAG=$3" "${gphkv_args[@]}" >>"$log" 2>&1 &
      ;;
    null)
      [ -x "$NULL_SERVER" ] || { echo "loadgen-compare: $NULL_SERVER not built" >&2; return 1; }
      "${prio[@]}" "$NULL_SERVER" --address=127.0.0.1:"$2" --threads="$3" "${null_args[@]}" >>"$log" 2>&1 &
      ;;
    memcached)
      command -v "$MEMCACHED" >/dev/null || { echo "loadgen-compare: $MEMCACHED not installed" >&2; return 1; }
      local user=(); [ "$(id -u)" -eq 0 ] && user=(-u nobody)
      "${prio[@]}" "$MEMCACHED" -l 127.0.0.1 -p "$2" -U 0 -t "$3" -m "$MEMCACHED_MB" -c 4096 "${user[@]}" >>"$log" 2>&1 &
      ;;
    *) echo "loadgen-compare: unknown target $1 (want gphkv, memcached or null)" >&2; return 1 ;;
  esac
  server_pid=$!
}

# field FILE EXPR: a value from a loadgen JSON report (EXPR indexes r).
field() { py "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"; }
# passes FILE: 1 when the run kept p99 under the bound with no error, no dropped call and no read violation.
passes() {
  field "$1" 'int(r["results"]["overall"]["latency"]["p99_us"] < '"$P99_LIMIT_US"' and r["results"]["overall"]["errors"] == 0 and r["results"]["dropped_calls"] == 0 and r["results"].get("read_check", {}).get("violations", 0) == 0)'
}

# run STORE PRESET PHASE NAME [loadgen flags...]: one run against the store
# started last; its report is OUT/runs/NAME.json, indexed in OUT/runs.jsonl.
# The store's protocol: null speaks gphkv's.
run() {
  local store=$1 preset=$2 phase=$3 name=$4
  shift 4
  local json="$OUT/runs/$name.json" target=$store
  [ "$store" = null ] && target=gphkv
  local args=(--target="$target" --address="$addr" --api="$API" --workload="$preset" --keys="$KEYS" --seed="$SEED"
              --threads="$THREADS" --connections="$CONNECTIONS" --warmup="$WARMUP_S" --duration="$STEP_S"
              --drain_timeout="$DRAIN_S" --wait_ready=60 --progress=false --server_pid="$server_pid" --json="$json")
  # The null server stores nothing: checking its reads would only say so.
  [ "$store" = null ] && args+=(--check_reads=off)
  local bound
  bound=$(py "print(int($WARMUP_S + $STEP_S + $DRAIN_S + 120))")  # the load included
  # A failed exit with a report is a result (3: every call failed; 4: the
  # read check found violations, counted in the report).
  if ! timeout "$bound" "${prio[@]}" "$LOADGEN" "${args[@]}" "$@" >"$OUT/runs/$name.txt" 2>"$OUT/runs/$name.err"; then
    [ -f "$json" ] || { echo "   $name: no report ($(tail -1 "$OUT/runs/$name.err"))" >&2; return 1; }
  fi
  printf '{"store": "%s", "preset": "%s", "phase": "%s", "name": "%s"}\n' "$store" "$preset" "$phase" "$name" \
    >>"$OUT/runs.jsonl"
}
# The first run of a preset loads its items (value sizes differ by preset); null stores nothing.
load_flag() { [ "$1" = null ] && echo --load=false || echo --load=true; }
# cores FILE: "loadgen/server cores", and how long the run's load took when it had one (to calibrate LOAD_EST_S).
cores() {
  field "$1" '"%.1f/%s%s" % (r["results"]["cpu"]["loadgen_cores"], "-" if r["results"]["cpu"]["server_cores"] is None else "%.1f" % r["results"]["cpu"]["server_cores"], "; load %.1f s" % r["load"]["seconds"] if r["load"]["ran"] else "")'
}

tune_preset=${WORKLOADS%% *}
tune_preset=${tune_preset:-default}
for store in $TARGETS; do
  echo "== $store"
  # 1. The server's threads.
  best_threads=${SERVER_THREADS%% *}
  if [ "$(count "$SERVER_THREADS")" -gt 1 ]; then
    best_rate=0
    for t in $SERVER_THREADS; do
      port=$(free_port); addr=127.0.0.1:$port
      start_server "$store" "$port" "$t" || continue 2
      if run "$store" "$tune_preset" tune "$store-tune-t$t" --mode=closed --depth="$TUNE_DEPTH" "$(load_flag "$store")"; then
        rate=$(field "$OUT/runs/$store-tune-t$t.json" 'round(r["results"]["overall"]["calls_per_s"])')
        echo "   $t server threads: $rate calls/s closed loop (cores loadgen/server $(cores "$OUT/runs/$store-tune-t$t.json"))"
        if [ "$rate" -gt "$best_rate" ]; then best_rate=$rate; best_threads=$t; fi
      fi
      stop_server
    done
    echo "   keeping $best_threads server threads"
  fi
  port=$(free_port); addr=127.0.0.1:$port
  start_server "$store" "$port" "$best_threads" || continue
  echo "{\"store\": \"$store\", \"phase\": \"threads\", \"threads\": $best_threads}" >>"$OUT/runs.jsonl"

  # 2. Each preset: the closed-loop peak, then the open-loop search.
  for preset in $WORKLOADS; do
    peak=0 peak_depth="" loaded=$(load_flag "$store")
    for d in $PEAK_DEPTHS; do
      name="$store-$preset-peak-d$d"
      run "$store" "$preset" peak "$name" --mode=closed --depth="$d" "$loaded" || continue
      loaded=--load=false
      rate=$(field "$OUT/runs/$name.json" 'r["results"]["overall"]["calls_per_s"]')
      echo "   $preset: depth $d closed loop: $(py "print(round($rate))") calls/s (cores $(cores "$OUT/runs/$name.json"))"
      if py "import sys; sys.exit(0 if $rate > $peak else 1)"; then peak=$rate; peak_depth=$d; fi
    done
    [ -n "$peak_depth" ] || { echo "   $preset: no closed-loop run reported" >&2; continue; }
    [ "$preset" = default ] && default_peak_depth=$peak_depth
    if [ "$SEARCH" = 1 ] && [ "$store" != null ]; then
      lo=$(py "print($peak/50)"); hi=$(py "print($peak*1.2)"); passed=()
      for step in $(seq 1 "$STEPS"); do
        rate=$(py "import math; print(round(math.sqrt($lo*$hi)))")
        p99s=() ok_runs=0 clean=1
        for rep in $(seq 1 "$REPEATS"); do
          name="$store-$preset-step$step-r$rep"
          if run "$store" "$preset" step "$name" --load=false --mode=open --rate="$rate" --depth="$DEPTH" \
              --spin_us="$SPIN_US"; then
            p99s+=("$(field "$OUT/runs/$name.json" 'round(r["results"]["overall"]["latency"]["p99_us"])')")
            ok_runs=$((ok_runs + $(passes "$OUT/runs/$name.json")))
            [ "$(field "$OUT/runs/$name.json" 'r["results"]["overall"]["errors"] + r["results"]["dropped_calls"]')" = 0 ] || clean=0
          else
            p99s+=(none); clean=0
          fi
        done
        if [ "$PASS_RULE" = all ]; then
          ok=$([ "$ok_runs" = "$REPEATS" ] && echo 1 || echo 0)
        else
          ok=$(py "import statistics; p=[float(x) for x in '${p99s[*]}'.split() if x != 'none']; print(int($clean == 1 and len(p) == $REPEATS and statistics.median(p) < $P99_LIMIT_US))")
        fi
        echo "   $preset: step $step: $rate calls/s offered -> p99 ${p99s[*]} us: $([ "$ok" = 1 ] && echo pass || echo fail)"
        if [ "$ok" = 1 ]; then lo=$rate; passed+=("$rate"); else hi=$rate; fi
      done
      # The best passing rate once more; if it fails, the one below it.
      for ((i = ${#passed[@]} - 1, tries = 0; i >= 0 && tries < CONFIRM_TRIES; i--, tries++)); do
        rate=${passed[$i]}
        name="$store-$preset-confirm-$rate"
        run "$store" "$preset" confirm "$name" --load=false --mode=open --rate="$rate" --depth="$DEPTH" \
          --spin_us="$SPIN_US" --label="$preset, confirming $rate calls/s" --plot="$DOCS/loadgen-$store-$preset.svg" ||
          continue
        ok=$(passes "$OUT/runs/$name.json")
        echo "   $preset: confirm $rate calls/s -> p99 $(field "$OUT/runs/$name.json" 'round(r["results"]["overall"]["latency"]["p99_us"])') us: $([ "$ok" = 1 ] && echo confirmed || echo "not confirmed")"
        [ "$ok" = 1 ] && break
      done
    fi
  done

  # 3. Keys per request.
  if [ -n "$SIZES" ]; then
    depth=${SIZES_DEPTH:-${default_peak_depth:-4}} loaded=$(load_flag "$store")
    for n in $SIZES; do
      name="$store-size$n"
      run "$store" default size "$name" --mode=closed --depth="$depth" --read_batch="$n" "$loaded" || continue
      loaded=--load=false
      echo "   $n keys per get: $(field "$OUT/runs/$name.json" 'round(r["results"]["by_type"]["get"]["keys_per_s"])') keys/s (depth $depth, cores $(cores "$OUT/runs/$name.json"))"
    done
  fi
  unset default_peak_depth
  stop_server
done
elapsed=$((SECONDS - t_begin))
echo "loadgen-compare: took $elapsed s (plan: $plan)"

# The tables, the combined JSON and the plots.
commit=${COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
settings="TARGETS=\"$TARGETS\" WORKLOADS=\"$WORKLOADS\" API=$API SIZES=\"$SIZES\" THREADS=$THREADS CONNECTIONS=$CONNECTIONS DEPTH=$DEPTH PEAK_DEPTHS=\"$PEAK_DEPTHS\" SERVER_THREADS=\"$SERVER_THREADS\" KEYS=$KEYS WARMUP_S=$WARMUP_S STEP_S=$STEP_S STEPS=$STEPS REPEATS=$REPEATS PASS_RULE=$PASS_RULE CONFIRM_TRIES=$CONFIRM_TRIES P99_LIMIT_US=$P99_LIMIT_US BACKEND=$BACKEND SPIN_US=$SPIN_US GPHKV_THREADS_FLAG=$GPHKV_THREADS_FLAG${GPHKV_ARGS:+ GPHKV_ARGS=\"$GPHKV_ARGS\"}${NULL_ARGS:+ NULL_ARGS=\"$NULL_ARGS\"}${PRIO:+ PRIO=\"$PRIO\"}"
python3 scripts/loadgen-compare-report.py --out "$OUT" --docs "$DOCS" --limit-us "$P99_LIMIT_US" \
  --backend "$BACKEND" --commit "$commit" --command "$settings scripts/loadgen-compare.sh" --elapsed-s "$elapsed" \
  --plan "$plan" --tag "${TAG:-}" --api "$API" --pass-rule "$PASS_RULE" --repeats "$REPEATS"
