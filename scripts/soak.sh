#!/usr/bin/env bash
# The long run: gphkv-server with a data directory (so snapshots are taken while
# it serves) under open-loop gphkv-loadgen load with writes and deletes, the
# load generator restarted every RESTART_EVERY_S seconds (new clients, new
# connections), a `gphkv shrink` every SHRINK_EVERY_S; every SAMPLE_S seconds the
# server's RSS, its GPU memory (CUDA) and its Stats. A leak shows as a slope
# after the warm-up, a slowdown as a rising p99 per interval. Loopback only;
# everything ends after SOAK_S seconds of load. One script for both backends:
#
#   BACKEND=cpu SOAK_S=3900 OUT=/tmp/soak-cpu scripts/soak.sh     # here: copies build/'s binaries to OUT/bin first
#   BACKEND=cuda BUNDLE=.device-svc SOAK_S=720 OUT=build/soak-cuda scripts/soak.sh   # device (scripts/device-soak.sh)
#
# OUT then holds: samples.csv (one row per sample), stats.jsonl (each sample's
# `gphkv --json stats`), runs.csv (each load generator run: start, end, exit
# status) with loadgen-NN.json/.txt (its report, latency per INTERVAL_S),
# shrinks.txt (each shrink: when, how long its answer took, the answer),
# server.log and server_exit (the status after SIGTERM). scripts/soak-summary.py
# turns them into the result JSON and the plot.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
BACKEND=${BACKEND:-cpu}
OUT=${OUT:-build/soak-$BACKEND}
SOAK_S=${SOAK_S:-3900}
SAMPLE_S=${SAMPLE_S:-10}
INTERVAL_S=${INTERVAL_S:-60}  # the load's latency and rate, one point per interval
SHRINK_EVERY_S=${SHRINK_EVERY_S:-60}
RESTART_EVERY_S=${RESTART_EVERY_S:-300}
SNAPSHOT_INTERVAL=${SNAPSHOT_INTERVAL:-1m}  # about one snapshot in every minute of latency
WRITE_FRACTION=${WRITE_FRACTION:-0.1}
# The runs take these shares of deletes among the writes in turn: a run that
# deletes more keys than it puts back, then one that refills, so a shrink finds
# a table to rebuild and the value heap chunks to give back.
DELETE_FRACTIONS=${DELETE_FRACTIONS:-0.1 0.7}
if [ "$BACKEND" = cuda ]; then
  RATE=${RATE:-100000} KEYS=${KEYS:-4000000} MEMORY=${MEMORY:-16GiB} THREADS=${THREADS:-4}
else
  RATE=${RATE:-3000} KEYS=${KEYS:-1000000} MEMORY=${MEMORY:-2GiB} THREADS=${THREADS:-1}
fi

if [ -e "$OUT/samples.csv" ]; then
  echo "soak: $OUT holds an earlier soak; give another OUT" >&2
  exit 2
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# The binaries: a device bundle as it is (scripts/device-bundle-service.sh), or a
# private copy of the build's, so rebuilding build/ during the soak changes nothing under it.
if [ -n "${BUNDLE:-}" ]; then
  bin=$(cd "$BUNDLE/bin" && pwd)
  lib=$(cd "$BUNDLE/lib" && pwd)
  export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  commit=$(cat "$BUNDLE/COMMIT" 2>/dev/null || echo unknown)
else
  build=${BUILD_DIR:-build}
  bin=$OUT/bin
  mkdir -p "$bin"
  for b in server/gphkv-server client/gphkv loadgen/gphkv-loadgen; do
    cp "$build/$b" "$bin/" || { echo "soak: $build/$b is not built" >&2; exit 2; }
  done
  commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
  # Uncommitted changes went into the build: keep them beside the result.
  if ! git diff --quiet HEAD -- 2>/dev/null; then
    commit="$commit+dirty"
    git diff HEAD >"$OUT/tree.diff"
  fi
fi
port=${PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}
addr=127.0.0.1:$port
cli() { timeout 30 "$bin/gphkv" --server="$addr" --timeout=20s --json "$@"; }

server_cmd=("$bin/gphkv-server" --backend="$BACKEND" --listen_address="$addr" --metrics_address=
  --initial_capacity=$((KEYS / 4)) --memory="$MEMORY" --data_dir="$OUT/data" --fsync=everysec
  --snapshot_interval="$SNAPSHOT_INTERVAL")
load_cmd=("$bin/gphkv-loadgen" --address="$addr" --api=coalesced --keys="$KEYS" --mode=open --rate="$RATE"
  --write_fraction="$WRITE_FRACTION" --threads="$THREADS" --connections=2 --depth=256 --warmup=0
  --interval="$INTERVAL_S" --progress=false --wait_ready=60)
{
  echo "commit=$commit"
  echo "backend=$BACKEND soak_s=$SOAK_S sample_s=$SAMPLE_S interval_s=$INTERVAL_S shrink_every_s=$SHRINK_EVERY_S"
  echo "restart_every_s=$RESTART_EVERY_S rate=$RATE keys=$KEYS memory=$MEMORY snapshot_interval=$SNAPSHOT_INTERVAL"
  echo "delete_fractions=${DELETE_FRACTIONS// /,}"
  echo "server=${server_cmd[*]}"
  echo "loadgen=${load_cmd[*]} --load=true|false --delete_fraction=F --duration=S --server_pid=PID --json=OUT/loadgen-NN.json"
  echo "host=$(hostname) cpus=$(nproc) cpu_model=$(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)"
  echo "gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)"
  echo "started=$(date -u +%FT%TZ)"
} >"$OUT/config.txt"

"${server_cmd[@]}" >"$OUT/server.log" 2>&1 &
server=$!
driver=""
trap 'kill $driver 2>/dev/null; kill $server 2>/dev/null; wait' EXIT
for _ in $(seq 60); do cli health >/dev/null 2>&1 && break; sleep 1; done

# The load: the first run fills every key, the later ones start on what is
# there; each run is a new process, so each restart opens new connections.
drive() {
  local run=0 t_start=$SECONDS left d load json lg="" deletes
  read -r -a deletes <<<"$DELETE_FRACTIONS"
  trap 'kill $lg 2>/dev/null; exit' TERM
  echo "run,start_epoch,end_epoch,exit" >"$OUT/runs.csv"
  while :; do
    left=$((SOAK_S - (SECONDS - t_start)))
    [ "$left" -ge 10 ] || break
    d=$((left < RESTART_EVERY_S ? left : RESTART_EVERY_S))
    load=false
    [ $run -eq 0 ] && load=true
    json=$(printf '%s/loadgen-%02d' "$OUT" $run)
    local s
    s=$(date +%s.%N)
    "${load_cmd[@]}" --load=$load --delete_fraction="${deletes[run % ${#deletes[@]}]}" --duration="$d" --server_pid=$server --json="$json.json" >"$json.txt" 2>&1 &
    lg=$!
    wait $lg
    local rc=$?
    echo "$run,$s,$(date +%s.%N),$rc" >>"$OUT/runs.csv"
    # A failed start (e.g. the server gone) must not spin: the soak ends.
    [ $rc -eq 0 ] || { kill -0 $server 2>/dev/null || break; sleep 5; }
    run=$((run + 1))
  done
}
drive &
driver=$!

# server_cpu_s (the server's user + system CPU seconds so far) and load1 (the
# host's 1-minute load) tell a slow minute of the server from a busy machine.
echo "t_s,epoch,rss_kib,gpu_mib,gpu_used_mib,data_dir_bytes,shrinks_started,server_cpu_s,load1" >"$OUT/samples.csv"
tick=$(getconf CLK_TCK)
t0=$SECONDS next=0 next_shrink=$SHRINK_EVERY_S shrinks=0
while kill -0 $driver 2>/dev/null && kill -0 $server 2>/dev/null; do
  next=$((next + SAMPLE_S))
  [ $((t0 + next - SECONDS)) -gt 0 ] && sleep $((t0 + next - SECONDS))
  t=$((SECONDS - t0))
  if [ "$t" -ge "$next_shrink" ]; then
    s0=$(date +%s.%N)
    answer=$(cli shrink 2>&1 | tr '\n' ' ')
    echo "$t $(date -u -d @"$s0" +%T.%3N) $(python3 -c "print('%.3f' % ($(date +%s.%N) - $s0))")s $answer" \
      >>"$OUT/shrinks.txt"
    grep -q '"started":true' <<<"$answer" && shrinks=$((shrinks + 1))
    next_shrink=$((next_shrink + SHRINK_EVERY_S))
  fi
  rss=$(awk '/VmRSS/{print $2}' /proc/$server/status 2>/dev/null)
  gpu="" gpu_used=""
  if [ "$BACKEND" = cuda ]; then
    gpu=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null |
      awk -F', ' -v p=$server '$1 == p {print $2}')
    gpu_used=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -1)
  fi
  data=$(du -sb "$OUT/data" 2>/dev/null | cut -f1)
  stats=$(cli stats 2>/dev/null | tr -d '\n')
  [ "${stats:0:1}" = "{" ] && echo "{\"t_s\":$t,\"stats\":$stats}" >>"$OUT/stats.jsonl"
  cpu=$(awk -v t="$tick" '{printf "%.1f", ($14 + $15) / t}' /proc/$server/stat 2>/dev/null)
  echo "$t,$(date +%s),${rss:-},${gpu:-},${gpu_used:-},${data:-},$shrinks,${cpu:-},$(cut -d' ' -f1 /proc/loadavg)" \
    >>"$OUT/samples.csv"
done
wait $driver
# A graceful stop: drain, the last snapshot, exit 0 (docs/service.md).
s0=$SECONDS
kill -TERM $server
wait $server
echo "$? $((SECONDS - s0))" >"$OUT/server_exit"
echo "ended=$(date -u +%FT%TZ)" >>"$OUT/config.txt"
trap - EXIT
echo "soak: done in $OUT; last sample $(tail -1 "$OUT/samples.csv"); server exit $(cat "$OUT/server_exit")"
