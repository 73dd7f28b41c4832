#!/usr/bin/env bash
# A soak of gphkv-server under a mixed load with rebuilds and shrinks: the
# server's RSS, its GPU memory and its Stats sampled every SAMPLE_S seconds
# while gphkv-loadgen runs open loop, so a leak shows as a slope after the
# warm-up. Writes OUT/soak.csv (one row per sample), OUT/loadgen.json
# (the load's report: errors by status, latency over time), OUT/shrinks.txt
# (each shrink's time, how long its answer took, the answer) and the server's log.
#
#   scripts/device-soak.sh        # SOAK_S=480 BACKEND=cuda by default
#
# The load: every key loaded first, then 5% writes (a tenth of them deletes), keys over a space four
# times --initial_capacity, so the table grows by background rebuilds while
# serving; every SHRINK_EVERY_S seconds `gphkv shrink` asks for a rebuild
# into a table sized for the keys stored then.
set -uo pipefail
cd "$(dirname "$0")/.."
B=${BUNDLE:-.device-svc}
OUT=${OUT:-build/soak}
SOAK_S=${SOAK_S:-480}
SAMPLE_S=${SAMPLE_S:-10}  # Stats and RSS; the load reports latency every LATENCY_INTERVAL_S (default the same)
SHRINK_EVERY_S=${SHRINK_EVERY_S:-60}
RATE=${RATE:-100000}
KEYS=${KEYS:-4000000}
BACKEND=${BACKEND:-cuda}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
addr=127.0.0.1:50161
"$B/bin/gphkv-server" --backend="$BACKEND" --listen_address=$addr --metrics_address=127.0.0.1:50162 \
  --initial_capacity=$((KEYS / 4)) --memory=16GiB >"$OUT/server.log" 2>&1 &
server=$!
trap 'kill $server $load 2>/dev/null; wait' EXIT
sleep 2
"$B/bin/gphkv-loadgen" --address=$addr --api=coalesced --keys="$KEYS" --load=true --mode=open --rate="$RATE" \
  --write_fraction=0.05 --delete_fraction=0.1 --threads=4 --connections=2 --depth=256 --warmup=0 \
  --duration="$SOAK_S" --interval="${LATENCY_INTERVAL_S:-$SAMPLE_S}" --progress=false --server_pid=$server \
  --json="$OUT/loadgen.json" >"$OUT/loadgen.txt" 2>&1 &
load=$!
echo "t_s,rss_kib,gpu_mib,keys,table_bytes,value_heap_bytes,rebuilds,shrinks_started" >"$OUT/soak.csv"
t0=$SECONDS next_shrink=$SHRINK_EVERY_S shrinks=0
while kill -0 $load 2>/dev/null; do
  sleep "$SAMPLE_S"
  t=$((SECONDS - t0))
  if [ "$t" -ge "$next_shrink" ]; then
    s0=$(date +%s.%N)
    answer=$("$B/bin/gphkv" --server=$addr --json shrink 2>&1)
    echo "$t $(date -u -d @"$s0" +%T.%3N) $(python3 -c "print('%.3f' % ($(date +%s.%N) - $s0))")s $answer" >>"$OUT/shrinks.txt"
    grep -q '"started":true' <<<"$answer" && shrinks=$((shrinks + 1))
    next_shrink=$((next_shrink + SHRINK_EVERY_S))
  fi
  rss=$(awk '/VmRSS/{print $2}' /proc/$server/status 2>/dev/null)
  gpu=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null |
        awk -F', ' -v p=$server '$1 == p {print $2}')
  stats=$("$B/bin/gphkv" --server=$addr --json stats 2>/dev/null | python3 -c '
import json, sys
s = json.load(sys.stdin)
print(",".join(str(s.get(k, "")) for k in ("keys", "table_bytes", "value_heap_bytes", "rebuilds")))' 2>/dev/null)
  echo "$t,${rss:-},${gpu:-},${stats:-,,,},$shrinks" >>"$OUT/soak.csv"
done
wait $load
echo "soak: $(tail -1 "$OUT/soak.csv")"
grep -E "^all|^get|^put|^delete" "$OUT/loadgen.txt"
