#!/usr/bin/env bash
# What writes cost the reads around them (issue 25, "writes that do not hold
# reads"; issue 27's cache at its cap): closed loop, the default workload
# with a ladder of write fractions, every store under the same client, the
# stores interleaved at each fraction, ROUNDS rounds:
#
#   gphkv[@NAME]  gphkv-server (GPHKV_ARGS, and each variant's own flags)
#   memcached     memcached -t MEMCACHED_THREADS
#   null          bench/null_server (no table: the client's and transport's ceiling)
#
# The servers start once each and are loaded once (KEYS items); the writes
# overwrite them (no deletes). After each gphkv run the server's put stages
# (gphkv_put_stage_seconds: drain, plan, admit, evict, heap, table, finish) and its
# put runs' count are read from its metrics, as the difference over the run.
# OUT/write_mix.json gathers keys/s, calls/s, the cores of each side and the
# stages; OUT/runs/ keeps every report.
#
#   BUNDLE=.device-svc OUT=$OUT GPHKV_ARGS=--backend=cuda bash scripts/write-mix.sh
#
# Environment (defaults): FRACTIONS ("0 0.002 0.02 0.1"), ROUNDS (2), KEYS (1000000), WARMUP_S (2),
# DURATION_S (4), THREADS (8), CONNECTIONS (4), DEPTH (16), API (coalesced), SERVER_CORES (0-7),
# CLIENT_CORES (8-15), MEMCACHED_THREADS (4), STORES ("gphkv memcached null"), GPHKV_VARIANTS
# ("NAME:FLAGS;NAME:FLAGS", default "default:"; store gphkv@NAME, "default" keeps the name gphkv),
# LOADGEN_ARGS (more flags for every run), and the programs GPHKV_SERVER, NULL_SERVER, LOADGEN, MEMCACHED;
# GPHKV_SERVER_<NAME> runs variant NAME from another build (a change measured before and after in one run).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "${BUNDLE:-}" ]; then
  export LD_LIBRARY_PATH="$BUNDLE/lib:$BUNDLE/memcached/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  GPHKV_SERVER=${GPHKV_SERVER:-$BUNDLE/bin/gphkv-server} NULL_SERVER=${NULL_SERVER:-$BUNDLE/bin/null_server}
  LOADGEN=${LOADGEN:-$BUNDLE/bin/gphkv-loadgen} MEMCACHED=${MEMCACHED:-$BUNDLE/memcached/usr/bin/memcached}
fi
GPHKV_SERVER=${GPHKV_SERVER:-build/server/gphkv-server}
NULL_SERVER=${NULL_SERVER:-build/bench/null_server}
LOADGEN=${LOADGEN:-build/loadgen/gphkv-loadgen}
MEMCACHED=${MEMCACHED:-memcached}
FRACTIONS=${FRACTIONS:-0 0.002 0.02 0.1}
ROUNDS=${ROUNDS:-2}
KEYS=${KEYS:-1000000}
WARMUP_S=${WARMUP_S:-2}
DURATION_S=${DURATION_S:-4}
THREADS=${THREADS:-8}
CONNECTIONS=${CONNECTIONS:-4}
DEPTH=${DEPTH:-16}
API=${API:-coalesced}
SERVER_CORES=${SERVER_CORES:-0-7}
CLIENT_CORES=${CLIENT_CORES:-8-15}
MEMCACHED_THREADS=${MEMCACHED_THREADS:-4}
STORES=${STORES:-gphkv memcached null}
GPHKV_VARIANTS=${GPHKV_VARIANTS:-"default:"}
OUT=${OUT:-build/write-mix}
mkdir -p "$OUT/runs"

source scripts/lib/ports.sh  # free_port, wait_port
pids=()
stop_all() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap stop_all EXIT

# Every store's port, pid, metrics port and loadgen target.
declare -A port pid mport target
names=()
IFS=';' read -r -a specs <<<"$GPHKV_VARIANTS"
for store in $STORES; do
  case $store in
    gphkv)
      for spec in "${specs[@]}"; do
        v=${spec%%:*} flags=${spec#*:} name=gphkv
        [ "$v" = default ] || name="gphkv@$v"
        port[$name]=$(free_port) mport[$name]=$(free_port) target[$name]=gphkv
        binary_var="GPHKV_SERVER_$v" binary=$GPHKV_SERVER
        [ -n "${!binary_var:-}" ] && binary=${!binary_var}
        # shellcheck disable=SC2086
        taskset -c "$SERVER_CORES" "$binary" --listen_address=127.0.0.1:"${port[$name]}" \
          --metrics_address=127.0.0.1:"${mport[$name]}" ${GPHKV_ARGS:-} $flags >"$OUT/$name.server.log" 2>&1 &
        pid[$name]=$! pids+=($!) names+=("$name")
      done
      ;;
    memcached)
      port[memcached]=$(free_port) target[memcached]=memcached
      taskset -c "$SERVER_CORES" "$MEMCACHED" -u "$(id -un)" -l 127.0.0.1 -p "${port[memcached]}" -U 0 \
        -t "$MEMCACHED_THREADS" -m 8192 -c 4096 >"$OUT/memcached.server.log" 2>&1 &
      pid[memcached]=$! pids+=($!) names+=(memcached)
      ;;
    null)
      port[null]=$(free_port) target[null]=gphkv
      taskset -c "$SERVER_CORES" "$NULL_SERVER" --address=127.0.0.1:"${port[null]}" --value_bytes=190 \
        >"$OUT/null.server.log" 2>&1 &
      pid[null]=$! pids+=($!) names+=(null)
      ;;
    *) echo "write-mix: unknown store $store" >&2; exit 1 ;;
  esac
done
for n in "${names[@]}"; do wait_port "${port[$n]}"; done

scrape() { python3 -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$1/metrics', timeout=10).read().decode())"; }

# run NAME FRACTION ROUND LOAD
run() {
  local n=$1 f=$2 r=$3 load=$4 tag
  tag="$n-w$f-r$r"
  local args=(--target="${target[$n]}" --address=127.0.0.1:"${port[$n]}" --keys="$KEYS" --threads="$THREADS"
    --connections="$CONNECTIONS" --depth="$DEPTH" --warmup="$WARMUP_S" --duration="$DURATION_S"
    --write_fraction="$f" --delete_fraction=0 --server_pid="${pid[$n]}" --progress=false --load="$load"
    --json="$OUT/runs/$tag.json")
  [ "${target[$n]}" = gphkv ] && args+=(--api="$API")
  [ "$n" = null ] && args+=(--check_reads=off)
  [ -n "${mport[$n]:-}" ] && scrape "${mport[$n]}" >"$OUT/runs/$tag.before.prom"
  # shellcheck disable=SC2086
  taskset -c "$CLIENT_CORES" "$LOADGEN" "${args[@]}" ${LOADGEN_ARGS:-} >"$OUT/runs/$tag.txt" 2>&1 || {
    echo "write-mix: gphkv-loadgen failed against $n (w=$f):" >&2
    tail -5 "$OUT/runs/$tag.txt" >&2
    exit 1
  }
  [ -n "${mport[$n]:-}" ] && scrape "${mport[$n]}" >"$OUT/runs/$tag.after.prom"
  echo "write-mix: $tag done" >&2
}

declare -A loaded
for r in $(seq 1 "$ROUNDS"); do
  for f in $FRACTIONS; do
    for n in "${names[@]}"; do
      load=false
      if [ -z "${loaded[$n]:-}" ]; then load=true; loaded[$n]=1; fi
      run "$n" "$f" "$r" "$load"
    done
  done
done

python3 - "$OUT" "$ROUNDS" "$FRACTIONS" "${names[@]}" <<'EOF' | tee "$OUT/write_mix.json"
import json, re, statistics, sys
out, rounds, fractions, names = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4:]
STAGES = ["drain", "plan", "admit", "evict", "heap", "table", "finish"]

def prom(path):
    vals = {}
    try:
        for line in open(path):
            m = re.match(r'(gphkv_put_stage_seconds_(?:sum|count)|gphkv_device_seconds_(?:sum|count))\{([^}]*)\} (\S+)', line)
            if m:
                vals[(m.group(1), m.group(2))] = float(m.group(3))
    except OSError:
        return None
    return vals

rows, medians = [], {}
for f in fractions:
    for n in names:
        reps = []
        for r in range(1, rounds + 1):
            tag = f"{n}-w{f}-r{r}"
            rep = json.load(open(f"{out}/runs/{tag}.json"))
            o = rep["results"]["overall"]
            row = {"store": n, "write_fraction": float(f), "round": r, "keys_per_s": o["keys_per_s"],
                   "calls_per_s": o["calls_per_s"], "errors": o["errors"], "cpu": rep["results"].get("cpu")}
            a, b = prom(f"{out}/runs/{tag}.after.prom"), prom(f"{out}/runs/{tag}.before.prom")
            if a is not None and b is not None:
                runs = a.get(("gphkv_put_stage_seconds_count", 'stage="plan"'), 0) - b.get(("gphkv_put_stage_seconds_count", 'stage="plan"'), 0)
                row["put_runs"] = runs
                row["put_stage_mean_us"] = {
                    s: (1e6 * (a.get(("gphkv_put_stage_seconds_sum", f'stage="{s}"'), 0) -
                               b.get(("gphkv_put_stage_seconds_sum", f'stage="{s}"'), 0)) / runs) if runs else None
                    for s in STAGES}
                gets = a.get(("gphkv_device_seconds_count", 'op="get"'), 0) - b.get(("gphkv_device_seconds_count", 'op="get"'), 0)
                row["get_runs"] = gets
            rows.append(row)
            reps.append(row["keys_per_s"])
        medians.setdefault(n, {})[f] = statistics.median(reps)
print(json.dumps({"benchmark": "write-mix", "rounds": rounds, "fractions": [float(x) for x in fractions],
                  "median_keys_per_s": medians, "runs": rows}, indent=1))
EOF
