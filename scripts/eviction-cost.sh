#!/usr/bin/env bash
# What eviction costs a cache at its cap (issue 27's goal: at the memory cap
# with eviction on, the closed-loop peak at least 0.9x the same workload with
# memory to spare). Closed loop, the default workload with cache-aside fills
# (gphkv-loadgen --cache_aside: a get's misses are put back), after the load
# phase wrote every key once (so a cache at its cap starts full and evicting,
# and one with room holds every key), the stores interleaved, ROUNDS rounds:
#
#   gphkv-cap        gphkv-server --eviction=lru --memory=CAP_MEMORY
#   gphkv-spare      gphkv-server --eviction=lru --memory=SPARE_MEMORY (room for every key)
#   memcached-cap    memcached -m CAP_MB (its own LRU)
#   memcached-spare  memcached -m SPARE_MB
#   null             bench/null_server: the client's and the transport's ceiling
#
# Each run writes its gphkv-loadgen report (keys/s, hit ratio, fills, the cores
# of each side) to OUT/STORE-ROUND.json; OUT/eviction_cost.json gathers them,
# with the medians and the ratios cap / spare.
#
#   BUNDLE=.device-svc OUT=$OUT CAP_MEMORY=... CAP_MB=... bash scripts/eviction-cost.sh
#
# Environment (defaults): KEYS (1000000), CAP_MEMORY (bytes; required), SPARE_MEMORY (4GiB), CAP_MB (memcached
# -m for the cap; required), SPARE_MB (4096), ROUNDS (2), WARMUP_S (3), DURATION_S (5), THREADS (8),
# CONNECTIONS (4), DEPTH (16), API (coalesced), SERVER_CORES (0-7), CLIENT_CORES (8-15), MEMCACHED_THREADS (4),
# STORES (all five), CACHE_ASIDE (1; 0: no fills), LOADGEN_ARGS (more flags, e.g. a write stream:
# "--load=false --write_fraction=1" with CACHE_ASIDE=0, which isolates eviction from the fills' extra
# writes), GPHKV_ARGS, NULL_ARGS (--value_bytes=190: every get a hit), and the programs GPHKV_SERVER, NULL_SERVER, LOADGEN, CLI, MEMCACHED.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "${BUNDLE:-}" ]; then
  export LD_LIBRARY_PATH="$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  GPHKV_SERVER=${GPHKV_SERVER:-$BUNDLE/bin/gphkv-server} NULL_SERVER=${NULL_SERVER:-$BUNDLE/bin/null_server}
  LOADGEN=${LOADGEN:-$BUNDLE/bin/gphkv-loadgen} CLI=${CLI:-$BUNDLE/bin/gphkv}
  MEMCACHED=${MEMCACHED:-$BUNDLE/memcached/usr/bin/memcached}
  [ -d "$BUNDLE/memcached/usr/lib/x86_64-linux-gnu" ] &&
    export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$BUNDLE/memcached/usr/lib/x86_64-linux-gnu"
fi
GPHKV_SERVER=${GPHKV_SERVER:-build/server/gphkv-server}
NULL_SERVER=${NULL_SERVER:-build/bench/null_server}
LOADGEN=${LOADGEN:-build/loadgen/gphkv-loadgen}
CLI=${CLI:-build/client/gphkv}
MEMCACHED=${MEMCACHED:-memcached}
KEYS=${KEYS:-1000000}
: "${CAP_MEMORY:?CAP_MEMORY (bytes of --memory at the cap) is required}"
: "${CAP_MB:?CAP_MB (memcached -m at the cap) is required}"
SPARE_MEMORY=${SPARE_MEMORY:-4GiB}
SPARE_MB=${SPARE_MB:-4096}
ROUNDS=${ROUNDS:-2}
WARMUP_S=${WARMUP_S:-3}
DURATION_S=${DURATION_S:-5}
THREADS=${THREADS:-8}
CONNECTIONS=${CONNECTIONS:-4}
DEPTH=${DEPTH:-16}
API=${API:-coalesced}
SERVER_CORES=${SERVER_CORES:-0-7}
CLIENT_CORES=${CLIENT_CORES:-8-15}
MEMCACHED_THREADS=${MEMCACHED_THREADS:-4}
STORES=${STORES:-gphkv-cap gphkv-spare memcached-cap memcached-spare null}
OUT=${OUT:-build/eviction-cost}
mkdir -p "$OUT"

source scripts/lib/ports.sh  # free_port, wait_port
pid=
stop() {
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    pid=
  fi
}
trap stop EXIT


# run STORE ROUND: starts the store, runs the load, stops it.
run() {
  local store=$1 round=$2 port target=gphkv api=$API
  port=$(free_port)
  case $store in
    gphkv-cap | gphkv-spare)
      local memory=$CAP_MEMORY
      [ "$store" = gphkv-spare ] && memory=$SPARE_MEMORY
      # shellcheck disable=SC2086
      taskset -c "$SERVER_CORES" "$GPHKV_SERVER" --listen_address=127.0.0.1:"$port" --metrics_address= \
        --memory="$memory" --eviction=lru ${GPHKV_ARGS:-} >"$OUT/$store-$round.server.log" 2>&1 &
      ;;
    memcached-cap | memcached-spare)
      local mb=$CAP_MB
      [ "$store" = memcached-spare ] && mb=$SPARE_MB
      taskset -c "$SERVER_CORES" "$MEMCACHED" -u "$(id -un)" -l 127.0.0.1 -p "$port" -U 0 -t "$MEMCACHED_THREADS" -m "$mb" \
        -c 4096 >"$OUT/$store-$round.server.log" 2>&1 &
      target=memcached
      ;;
    null)
      # shellcheck disable=SC2086
      taskset -c "$SERVER_CORES" "$NULL_SERVER" --address=127.0.0.1:"$port" ${NULL_ARGS:---value_bytes=190} >"$OUT/$store-$round.server.log" 2>&1 &
      ;;
    *) echo "eviction-cost: unknown store $store" >&2; exit 1 ;;
  esac
  pid=$!
  wait_port "$port" 10
  local api_flag=(--api="$api") cache_aside=(--cache_aside)
  [ "${CACHE_ASIDE:-1}" = 1 ] || cache_aside=()
  [ "$target" = memcached ] && api_flag=()
  # The null server's values are not the ones written: nothing to check.
  [ "$store" = null ] && api_flag+=(--check_reads=off)
  # shellcheck disable=SC2086
  taskset -c "$CLIENT_CORES" "$LOADGEN" --target="$target" --address=127.0.0.1:"$port" "${api_flag[@]}" \
    --keys="$KEYS" "${cache_aside[@]}" --threads="$THREADS" --connections="$CONNECTIONS" --depth="$DEPTH" \
    --warmup="$WARMUP_S" --duration="$DURATION_S" --server_pid="$pid" --progress=false \
    --json="$OUT/$store-$round.json" ${LOADGEN_ARGS:-} >"$OUT/$store-$round.txt" 2>&1 || {
    echo "eviction-cost: gphkv-loadgen failed against $store:" >&2
    tail -5 "$OUT/$store-$round.txt" >&2
    exit 1
  }
  if [ "$target" = gphkv ] && [ "$store" != null ]; then
    "$CLI" --server=127.0.0.1:"$port" --json stats >"$OUT/$store-$round.stats.json" 2>/dev/null || true
  fi
  stop
  echo "eviction-cost: $store round $round done" >&2
}

for round in $(seq 1 "$ROUNDS"); do
  for store in $STORES; do run "$store" "$round"; done
done

python3 - "$OUT" "$ROUNDS" "$STORES" <<'EOF' | tee "$OUT/eviction_cost.json"
import json, statistics, sys
out, rounds, stores = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
runs, medians = {}, {}
for s in stores:
    runs[s] = []
    for r in range(1, rounds + 1):
        rep = json.load(open(f"{out}/{s}-{r}.json"))
        res = rep["results"]
        row = {"keys_per_s": res["overall"]["keys_per_s"], "calls_per_s": res["overall"]["calls_per_s"],
               "hit_ratio": res["overall"].get("hit_ratio"), "fill_keys": res.get("fills", {}).get("keys"),
               "errors": res["overall"]["errors"], "cpu": res.get("cpu")}
        try:
            st = json.load(open(f"{out}/{s}-{r}.stats.json"))
            row["keys_held"], row["evictions"] = st["keys"], st.get("evictions")
        except (OSError, ValueError):
            pass
        runs[s].append(row)
    medians[s] = statistics.median(x["keys_per_s"] for x in runs[s])
ratios = {}
for kind in ("gphkv", "memcached"):
    if f"{kind}-cap" in medians and f"{kind}-spare" in medians:
        ratios[f"{kind}_cap_over_spare"] = medians[f"{kind}-cap"] / medians[f"{kind}-spare"]
print(json.dumps({"benchmark": "eviction-cost", "rounds": rounds, "median_keys_per_s": medians, "ratios": ratios,
                  "runs": runs}, indent=2))
EOF
