#!/usr/bin/env bash
# gphkv vs memcached under the default TaoBench-style workload, same machine,
# same client threads: for each store, the highest open-loop rate (batched
# calls/s) at which p99 latency stays under P99_LIMIT_US, found by a short
# bounded search. Writes OUT/results.md (the run's table, kept beside its JSON),
# OUT/results.json, OUT/<target>-*.json (every step's full report) and the
# plots $DOCS/loadgen-compare.svg (p99 vs offered load) and
# $DOCS/loadgen-<target>.svg (the best run over time); DOCS defaults to docs/.
#
#   scripts/loadgen-compare.sh                      # both stores
#   TARGETS=memcached scripts/loadgen-compare.sh    # one of them
#
# Knobs (environment): TARGETS, THREADS, CONNECTIONS, DEPTH, KEYS, STEP_S, WARMUP_S, STEPS, SPIN_US,
# P99_LIMIT_US, BACKEND (auto|cpu|cuda), OUT, GPHKV_SERVER, LOADGEN, and
# PRIO, a command prefix for the stores and the client on a machine shared
# with other work (e.g. PRIO="chrt -f 5": real-time FIFO priority, root
# only); every step's report gives the send lag, which says whether the
# client kept its schedule.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=${TARGETS:-"gphkv memcached"}
THREADS=${THREADS:-2}            # client threads; memcached gets as many worker threads
CONNECTIONS=${CONNECTIONS:-2}    # per client thread
DEPTH=${DEPTH:-16}               # open loop: room for calls per connection
KEYS=${KEYS:-1000000}
STEP_S=${STEP_S:-4}              # measured seconds per search step
WARMUP_S=${WARMUP_S:-1}
STEPS=${STEPS:-7}                # open-loop steps after the closed-loop probe
P99_LIMIT_US=${P99_LIMIT_US:-1000}
BACKEND=${BACKEND:-auto}
OUT=${OUT:-build/loadgen-compare}
GPHKV_SERVER=${GPHKV_SERVER:-build/server/gphkv-server}
LOADGEN=${LOADGEN:-build/loadgen/gphkv-loadgen}
SEED=${SEED:-1}
DOCS=${DOCS:-docs}               # where the plots go
SPIN_US=${SPIN_US:-0}            # open loop: busy-poll before due sends (50 on a dedicated many-core client)
read -r -a prio <<<"${PRIO:-}"

mkdir -p "$OUT" "$DOCS"
[ -x "$LOADGEN" ] || { echo "loadgen-compare: $LOADGEN not built (scripts/build.sh)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "loadgen-compare: needs python3 to read the JSON reports" >&2; exit 1; }
if [ "$BACKEND" = auto ]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then BACKEND=cuda; else BACKEND=cpu; fi
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
server_pid=""
stop_server() { if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; server_pid=""; fi; }
trap stop_server EXIT

start_server() {  # target port
  case "$1" in
    gphkv)
      [ -x "$GPHKV_SERVER" ] || { echo "loadgen-compare: $GPHKV_SERVER not built" >&2; return 1; }
      "${prio[@]}" "$GPHKV_SERVER" --listen_address=127.0.0.1:"$2" --metrics_address= --backend="$BACKEND" \
        >"$OUT/gphkv-server.log" 2>&1 &
      ;;
    memcached)
      command -v memcached >/dev/null || { echo "loadgen-compare: memcached not installed" >&2; return 1; }
      local user=(); [ "$(id -u)" -eq 0 ] && user=(-u nobody)
      "${prio[@]}" memcached -l 127.0.0.1 -p "$2" -U 0 -t "$THREADS" -m "${MEMCACHED_MB:-2048}" -c 4096 "${user[@]}" \
        >"$OUT/memcached.log" 2>&1 &
      ;;
  esac
  server_pid=$!
}

# field FILE EXPR: a value from a loadgen JSON report (EXPR indexes r).
field() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"; }

common=(--threads="$THREADS" --connections="$CONNECTIONS" --keys="$KEYS" --seed="$SEED" --progress=false
        --warmup="$WARMUP_S" --duration="$STEP_S" --wait_ready=60)

for target in $TARGETS; do
  rm -f "$OUT/$target"-*   # a previous run's steps must not join this one's curve
  port=$(free_port)
  start_server "$target" "$port" || continue
  addr=127.0.0.1:$port
  echo "== $target on $addr ($([ "$target" = gphkv ] && echo "backend $BACKEND" || echo "$THREADS threads"))"
  # Load the key space once, then probe the closed-loop peak: the search's ceiling.
  if ! timeout 900 "${prio[@]}" "$LOADGEN" --target="$target" --address="$addr" "${common[@]}" --mode=closed \
      --depth=4 --json="$OUT/$target-closed.json" >"$OUT/$target-closed.txt" 2>"$OUT/$target-closed.err"; then
    echo "   the load or the closed-loop probe failed: $(tail -1 "$OUT/$target-closed.err")" >&2
    stop_server
    continue
  fi
  peak=$(field "$OUT/$target-closed.json" 'r["results"]["overall"]["calls_per_s"]')
  echo "   closed-loop peak: $peak calls/s"
  # Bisection on a log scale between peak/50 (assumed good) and 1.2 x peak
  # (assumed bad); each step is one short open-loop run.
  lo=$(python3 -c "print($peak/50)"); hi=$(python3 -c "print($peak*1.2)"); best=""
  for step in $(seq 1 "$STEPS"); do
    rate=$(python3 -c "import math; print(round(math.sqrt($lo*$hi)))")
    json="$OUT/$target-step$step.json"
    timeout 300 "${prio[@]}" "$LOADGEN" --target="$target" --address="$addr" "${common[@]}" --load=false --mode=open \
      --rate="$rate" --depth="$DEPTH" --spin_us="$SPIN_US" --json="$json" >"$OUT/$target-step$step.txt" || true
    if [ ! -f "$json" ]; then  # the run did not even report: count it as a failed step
      echo "   step $step: $rate calls/s offered -> no report"; hi=$rate; continue
    fi
    ok=$(field "$json" 'int(r["results"]["overall"]["latency"]["p99_us"] < '"$P99_LIMIT_US"' and r["results"]["overall"]["errors"] == 0 and r["results"]["dropped_calls"] == 0)')
    p99=$(field "$json" 'round(r["results"]["overall"]["latency"]["p99_us"], 1)')
    echo "   step $step: $rate calls/s offered -> p99 $p99 us $([ "$ok" = 1 ] && echo pass || echo fail)"
    if [ "$ok" = 1 ]; then lo=$rate; best=$json; else hi=$rate; fi
  done
  if [ -n "$best" ]; then
    cp "$best" "$OUT/$target-best.json"
    # The best rate once more, with its picture.
    rate=$(field "$best" 'r["config"]["drive"]["rate"]')
    timeout 300 "${prio[@]}" "$LOADGEN" --target="$target" --address="$addr" "${common[@]}" --load=false --mode=open \
      --rate="$rate" --depth="$DEPTH" --spin_us="$SPIN_US" --label="best rate under p99 ${P99_LIMIT_US}us" \
      --plot="$OUT/$target-best.svg" --json="$OUT/$target-best-replot.json" >/dev/null || true
    # Only the picture goes to docs/; its data and gnuplot script stay in $OUT.
    if [ -f "$OUT/$target-best.svg" ]; then cp "$OUT/$target-best.svg" "$DOCS/loadgen-$target.svg"; fi
  fi
  stop_server
done

# The table, the combined JSON and the p99-vs-load plot.
python3 - "$OUT" "$P99_LIMIT_US" "$TARGETS" "$BACKEND" "$DOCS" <<'PY'
import glob, json, os, platform, subprocess, sys, datetime
out, limit, targets, backend, docs = sys.argv[1], float(sys.argv[2]), sys.argv[3].split(), sys.argv[4], sys.argv[5]
def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"): return line.split(":", 1)[1].strip()
    except OSError: pass
    return platform.processor()
machine = f"{cpu_model()}, {os.cpu_count()} CPUs"
try:
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, timeout=10).stdout.strip()
except Exception:
    gpu = ""
results, curves = {}, {}
for t in targets:
    steps = []
    for f in sorted(glob.glob(f"{out}/{t}-step*.json"), key=lambda p: int(p.split("step")[-1].split(".")[0])):
        r = json.load(open(f)); o = r["results"]["overall"]
        steps.append({"offered_calls_per_s": r["config"]["drive"]["rate"], "calls_per_s": o["calls_per_s"],
                      "keys_per_s": o["keys_per_s"], "p50_us": o["latency"]["p50_us"], "p99_us": o["latency"]["p99_us"],
                      "p999_us": o["latency"]["p999_us"], "errors": o["errors"], "dropped": r["results"]["dropped_calls"]})
    best = f"{out}/{t}-best.json"
    b = json.load(open(best)) if os.path.exists(best) else None
    results[t] = {"steps": steps, "best": None}
    if b:
        o = b["results"]["overall"]
        results[t]["best"] = {"offered_calls_per_s": b["config"]["drive"]["rate"], "calls_per_s": o["calls_per_s"],
                              "keys_per_s": o["keys_per_s"], "bytes_per_s": o["bytes_per_s"], "hit_ratio": o["hit_ratio"],
                              "p50_us": o["latency"]["p50_us"], "p99_us": o["latency"]["p99_us"],
                              "p999_us": o["latency"]["p999_us"], "config": b["config"], "workload": b["workload"]}
    curves[t] = steps
date = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC")
any_best = next((results[t]["best"] for t in targets if results[t]["best"]), None)
lines = [f"Default TaoBench-style workload, open loop, highest rate with p99 < {limit:g} us ({date}; {machine}" + (f"; GPU {gpu}" if gpu else "") + ")", ""]
if any_best:
    c, w = any_best["config"], any_best["workload"]
    lines.append(f"Configuration: {c['workload']['keys']} keys, zipf s={w['zipf_exponent']:.3f} (top 20% -> {100*w['expected_hot_share']:.1f}%), "
                 f"{100*c['workload']['write_fraction']:.1f}% writes, mean {w['mean_read_batch']:.1f} keys per get; client: "
                 f"{c['drive']['threads']} threads x {c['drive']['connections_per_thread']} connections, {c['drive']['duration_s']:g} s per step"
                 + (f"; gphkv backend: {backend}" if "gphkv" in targets else ""))
    lines.append("")
# The best step was run once more (for its plot): its p99 is shown too, so a
# reader sees how well the figure repeats on this machine.
lines += ["| store | calls/s | keys/s | value MB/s | hit % | p50 us | p99 us | p99.9 us | p99 us, repeat run |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
for t in targets:
    b = results[t]["best"]
    again = f"{out}/{t}-best-replot.json"
    if b:
        rep = json.load(open(again))["results"]["overall"]["latency"]["p99_us"] if os.path.exists(again) else None
        results[t]["best"]["repeat_p99_us"] = rep
        rep_s = f"{rep:.0f}" if rep is not None else "-"
        lines.append(f"| {t} | {b['calls_per_s']:,.0f} | {b['keys_per_s']:,.0f} | {b['bytes_per_s']/1e6:,.1f} | {100*b['hit_ratio']:.2f} | {b['p50_us']:.0f} | {b['p99_us']:.0f} | {b['p999_us']:.0f} | {rep_s} |")
    else:
        lines.append(f"| {t} | no rate met the limit (or the store did not start) | | | | | | | |")
if all(results.get(t, {}).get("best") for t in ("gphkv", "memcached")):
    ratio = results["gphkv"]["best"]["keys_per_s"] / results["memcached"]["best"]["keys_per_s"]
    lines += ["", f"gphkv / memcached keys/s at p99 < {limit:g} us: {ratio:.2f}x"]
open(f"{out}/results.md", "w").write("\n".join(lines) + "\n")
json.dump({"schema": "gphkv-loadgen-compare", "schema_version": 1, "date": date, "machine": machine, "gpu": gpu,
           "p99_limit_us": limit, "gphkv_backend": backend, "results": results}, open(f"{out}/results.json", "w"), indent=2)
print("\n".join(lines))
# p99 against offered keys/s, one curve per store.
dat = []
for t in targets:
    with open(f"{out}/{t}-curve.dat", "w") as f:
        for s in sorted(curves[t], key=lambda s: s["offered_calls_per_s"]):
            f.write(f"{s['keys_per_s']:.1f} {s['p99_us']:.2f} {s['p50_us']:.2f}\n")
    if curves[t]:
        dat.append(t)
plots = ", ".join(f"'{out}/{t}-curve.dat' using 1:2 with linespoints lw 2 title '{t} p99'" for t in dat)
gp = f"""set terminal svg size 900,550 dynamic font 'sans,11'
set output '{docs}/loadgen-compare.svg'
set title "p99 latency vs achieved keys/s, default TaoBench-style workload ({date})"
set xlabel 'keys/s (open loop, achieved)'
set ylabel 'p99 latency (us)'
set logscale y
set grid
set format x '%.1s%c'
set key top left
plot {plots}, {limit} with lines dt 2 lc rgb 'gray' title 'p99 limit'
"""
open(f"{out}/compare.gp", "w").write(gp)
if dat and subprocess.run(["sh", "-c", "command -v gnuplot"], capture_output=True).returncode == 0:
    subprocess.run(["gnuplot", f"{out}/compare.gp"], check=False)
PY
echo "loadgen-compare: $OUT/results.md, $OUT/results.json, $DOCS/loadgen-compare.svg"
