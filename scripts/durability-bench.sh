#!/usr/bin/env bash
# What the data directory costs and what a restart takes, in one run
# (docs/durability.md, "Measuring"):
#
#   1. puts through the server: gphkv-server with no --data_dir, then with
#      --fsync=never, everysec and always, each driven by gphkv-loadgen with
#      puts only (closed loop); a line per setting (keys/s, p50, p99) and
#      everysec's throughput against no log (the goal: under 10% lost); then a
#      restart of the `always` server after SIGTERM (its final snapshot);
#   2. a restart with RESTART_KEYS pairs: store_snapshot_bench fills a store
#      and writes its snapshot (--keep), then gphkv-server starts on that
#      directory, timed from exec to SERVING (the goal at 10^8 keys: under 10 s);
#   3. with KILL_TESTS=1 (the default on cuda): the kill -9 tests
#      (durable_server_tests: kill under load with always and everysec, a
#      simulated machine crash, the kill during a snapshot and during a table
#      rebuild, a disk error, damaged files) against this backend's server.
#
# From a checkout (build/ binaries, CPU):        scripts/durability-bench.sh
# From the device bundle (scripts/device-bundle-service.sh puts this script
# and the binaries in .device-svc/):              .device-svc/durability-bench.sh
#
# Knobs (environment, defaults below): BACKEND, KEYS (loadgen's key space),
# SECONDS_EACH, WRITE_BATCH, VALUE, API, THREADS, CONNECTIONS, DEPTH, MEMORY,
# RESTART_KEYS, RESTART_VALUE, RESTART_REPEAT (restarts timed on the one
# snapshot, 1 by default), RESTART_BASELINE (another build's gphkv-server,
# timed once more on that snapshot), KILL_TESTS, SECTIONS (which of the three
# steps run, comma-separated: puts,restart,kill, all by default; e.g.
# SECTIONS=restart times only the restart), RESULTS_DIR (every log and JSON
# report, and durability-bench.tgz of them all, also copied to COPY_TO when
# set), DATA (the directory whose disk is measured), BIN (the binaries).
# Exits 1 when a step failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ -x "$here/bin/gphkv-server" ]; then  # the bundle
  BIN=${BIN:-$here/bin}
  RESULTS_DIR=${RESULTS_DIR:-$here/durability-results}
  BACKEND=${BACKEND:-cuda}
else
  cd "$here/.."
  RESULTS_DIR=${RESULTS_DIR:-build/durability-bench}
  BACKEND=${BACKEND:-cpu}
fi
BIN=${BIN:-}
if [ -n "$BIN" ]; then
  SERVER=$BIN/gphkv-server LOADGEN=$BIN/gphkv-loadgen CLI=$BIN/gphkv
  SNAPSHOT_BENCH=$BIN/store_snapshot_bench KILL_TESTS_BIN=$BIN/durable_server_tests
  export LD_LIBRARY_PATH="$BIN/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  SERVER=build/server/gphkv-server LOADGEN=build/loadgen/gphkv-loadgen CLI=build/client/gphkv
  SNAPSHOT_BENCH=build/bench/store_snapshot_bench KILL_TESTS_BIN=build/tests/server/durable_server_tests
fi
DATA=${DATA:-$RESULTS_DIR/data}
if [ "$BACKEND" = cuda ]; then
  KEYS=${KEYS:-1000000} THREADS=${THREADS:-4} CONNECTIONS=${CONNECTIONS:-8} DEPTH=${DEPTH:-16}
  RESTART_KEYS=${RESTART_KEYS:-100000000} KILL_TESTS=${KILL_TESTS:-1}
else
  KEYS=${KEYS:-200000} THREADS=${THREADS:-2} CONNECTIONS=${CONNECTIONS:-2} DEPTH=${DEPTH:-8}
  RESTART_KEYS=${RESTART_KEYS:-1000000} KILL_TESTS=${KILL_TESTS:-0}
fi
SECTIONS=${SECTIONS:-puts,restart,kill}
SECONDS_EACH=${SECONDS_EACH:-10}
WRITE_BATCH=${WRITE_BATCH:-16}
VALUE=${VALUE:-100}
API=${API:-unary}
MEMORY=${MEMORY:-4GiB}
RESTART_VALUE=${RESTART_VALUE:-16}
mkdir -p "$RESULTS_DIR"
addr=127.0.0.1:50171
server=""
status=0
trap '[ -n "$server" ] && kill $server 2>/dev/null; wait' EXIT
section() { [[ ",$SECTIONS," == *",$1,"* ]]; }

echo "durability-bench: sections $SECTIONS; backend=$BACKEND, puts of $WRITE_BATCH keys x $VALUE B over $KEYS keys, ${SECONDS_EACH}s per" \
  "setting ($THREADS threads x $CONNECTIONS connections x depth $DEPTH); a restart with $RESTART_KEYS keys x" \
  "$RESTART_VALUE B; kill -9 tests: $([ "$KILL_TESTS" = 1 ] && echo yes || echo no); results in $RESULTS_DIR"
echo "commit: $(cat "$here/COMMIT" 2>/dev/null || git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"

wait_serving() {  # $1: seconds at most
  local tries=$(($1 * 20))
  for _ in $(seq "$tries"); do
    "$CLI" --server=$addr --timeout=1s health >/dev/null 2>&1 && return 0
    kill -0 "$server" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

start_server() {  # $1: the run's name, then flags
  local name=$1
  shift
  "$SERVER" --backend="$BACKEND" --listen_address=$addr --metrics_address= "$@" >>"$RESULTS_DIR/server-$name.log" 2>&1 &
  server=$!
}

stop_server() {
  [ -n "$server" ] && kill -TERM "$server" 2>/dev/null && wait "$server"
  server=""
}

# A restart of what the server left in $1, timed from exec to SERVING; $2: the run's name, then flags.
time_restart() {
  local dir=$1 name=$2
  shift 2
  local t0 t1
  t0=$(date +%s.%N)
  start_server "$name" --data_dir="$dir" "$@"
  if ! wait_serving 600; then
    echo "$name: the server did not reach SERVING"
    tail -20 "$RESULTS_DIR/server-$name.log"
    return 1
  fi
  t1=$(date +%s.%N)
  echo "$name: $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s from exec to SERVING;" \
    "$(grep -o 'data dir .*: the store holds .*' "$RESULTS_DIR/server-$name.log" | head -1 | cut -c1-200)"
  grep -o 'recovered .*' "$RESULTS_DIR/server-$name.log" | head -1 | cut -c1-240
}

# 1. Puts at each setting.
if section puts; then
  echo
  echo "setting    put line of gphkv-loadgen: op calls/s keys/s bytes/s hit% errors p50 p90 p99 p99.9 max"
  declare -A keys_per_s
  for setting in none never everysec always; do
    rm -rf "$DATA"
    flags=(--memory="$MEMORY")
    [ "$setting" != none ] && flags+=(--data_dir="$DATA" --fsync="$setting")
    start_server "$setting" "${flags[@]}"
    if ! wait_serving 120; then
      echo "$setting: the server did not start"
      tail -20 "$RESULTS_DIR/server-$setting.log"
      status=1
      stop_server
      continue
    fi
    "$LOADGEN" --target=gphkv --address=$addr --api="$API" --keys="$KEYS" --write_fraction=1 --delete_fraction=0 \
      --write_batch="$WRITE_BATCH" --object_value="$VALUE" --association_value="$VALUE" --threads="$THREADS" \
      --connections="$CONNECTIONS" --depth="$DEPTH" --warmup=2 --duration="$SECONDS_EACH" --progress=false \
      --json="$RESULTS_DIR/$setting.json" >"$RESULTS_DIR/loadgen-$setting.txt" 2>&1 ||
      { echo "$setting: loadgen failed"; tail -20 "$RESULTS_DIR/loadgen-$setting.txt"; status=1; }
    line=$(grep -E '^put ' "$RESULTS_DIR/loadgen-$setting.txt")
    printf '%-10s %s\n' "$setting" "$line"
    keys_per_s[$setting]=$(echo "$line" | awk '{ print $3 }')
    stop_server
    if [ "$setting" = always ]; then
      time_restart "$DATA" "restart-after-always" --memory="$MEMORY" || status=1
      stop_server
    fi
  done
  awk -v none="${keys_per_s[none]:-0}" -v es="${keys_per_s[everysec]:-0}" -v nv="${keys_per_s[never]:-0}" \
    -v al="${keys_per_s[always]:-0}" 'function k(s) { m = 1; if (s ~ /k$/) m = 1e3; if (s ~ /M$/) m = 1e6; return s * m }
    BEGIN { if (k(none) > 0) printf "puts against no log: never %+.1f%%, everysec %+.1f%% (goal: above -10%%), always %+.1f%%\n",
      100 * (k(nv) / k(none) - 1), 100 * (k(es) / k(none) - 1), 100 * (k(al) / k(none) - 1) }'
  rm -rf "$DATA"
fi

# 2. A restart with RESTART_KEYS pairs.
if section restart; then
  echo
  restart_memory=$((RESTART_KEYS * (64 + 2 * (RESTART_VALUE + 16))))
  [ "$restart_memory" -lt $((1 << 30)) ] && restart_memory=$((1 << 30))
  timeout 300 "$SNAPSHOT_BENCH" --backend="$BACKEND" --keys="$RESTART_KEYS" --value_bytes="$RESTART_VALUE" --dir="$RESULTS_DIR" \
    --keep --recover=false --json="$RESULTS_DIR/store_snapshot_bench.json" 2>&1 | tee "$RESULTS_DIR/store_snapshot_bench.txt"
  if [ -d "$RESULTS_DIR/store_snapshot_bench" ]; then
    # RESTART_REPEAT restarts of the one snapshot: a SIGTERM after nothing
    # was written takes no final snapshot, so each starts from the same files.
    for run in $(seq "${RESTART_REPEAT:-1}"); do
      name="restart-$RESTART_KEYS-keys"
      [ "${RESTART_REPEAT:-1}" -gt 1 ] && name="$name-run$run"
      time_restart "$RESULTS_DIR/store_snapshot_bench" "$name" --memory="$restart_memory" || status=1
      grep -o 'recovery: .*' "$RESULTS_DIR/server-$name.log" | head -1
      stop_server
    done
    # RESTART_BASELINE: another build's gphkv-server, timed on the same
    # snapshot after them (a before-and-after on one host).
    if [ -n "${RESTART_BASELINE:-}" ]; then
      SERVER_UNDER_TEST=$SERVER SERVER=$RESTART_BASELINE
      time_restart "$RESULTS_DIR/store_snapshot_bench" "restart-$RESTART_KEYS-keys-baseline" \
        --memory="$restart_memory" || status=1
      grep -o 'recovery: .*' "$RESULTS_DIR/server-restart-$RESTART_KEYS-keys-baseline.log" | head -1
      stop_server
      SERVER=$SERVER_UNDER_TEST
    fi
    rm -rf "$RESULTS_DIR/store_snapshot_bench"
  else
    echo "store_snapshot_bench left no directory: no restart timed"
    status=1
  fi
fi

# 3. The kill -9 tests against this backend's server.
if [ "$KILL_TESTS" = 1 ] && section kill; then
  echo
  GPHKV_SERVER=$SERVER GPHKV_SERVER_FLAGS="--backend=$BACKEND" TEST_TMPDIR="$RESULTS_DIR" timeout 300 "$KILL_TESTS_BIN" \
    --gtest_filter='DurableServer.*:DataDirDamage.*' >"$RESULTS_DIR/durable_server_tests.txt" 2>&1
  rc=$?
  grep -E 'round .*restarted|^\[  (PASSED|FAILED) |^\[       OK|^\[  FAILED' "$RESULTS_DIR/durable_server_tests.txt" | tail -40
  echo "kill -9 tests on $BACKEND: $([ $rc = 0 ] && echo passed || echo "FAILED (exit $rc; $RESULTS_DIR/durable_server_tests.txt)")"
  [ $rc = 0 ] || status=1
fi

tar czf "$RESULTS_DIR.tgz" --exclude=./durability-bench.tgz -C "$RESULTS_DIR" . && mv "$RESULTS_DIR.tgz" "$RESULTS_DIR/durability-bench.tgz"
[ -z "${COPY_TO:-}" ] || cp "$RESULTS_DIR/durability-bench.tgz" "$COPY_TO/"
exit $status
