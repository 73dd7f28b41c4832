#!/usr/bin/env bash
# gphkv-server's partition flags as a user meets them: bad --gpus lists and
# --gpu with --gpus refuse the start (exit 2) saying why; --partitions=3 on
# the CPU backend serves, and the CLI's stats show the total and each
# partition, with a data directory of one folder per partition that a server
# of another count refuses.
# Usage: cli_partitions_test.sh SERVER_BINARY CLI_BINARY
set -uo pipefail
server_bin=$1
cli=$2
dir=$(mktemp -d)
log=$dir/server.log
pid=""
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- server log"; cat "$log"; exit 1; }

# Refused flags: exit 2 and the reason, before anything is served.
refused() {  # refused 'what the log must say' FLAGS...
  local says=$1; shift
  "$server_bin" --listen_address=127.0.0.1:0 --metrics_address= "$@" >"$log" 2>&1; local rc=$?
  [ $rc -eq 2 ] || fail "gphkv-server $* should exit 2, got $rc"
  grep -q -- "$says" "$log" || fail "gphkv-server $* should say '$says'"
}
refused "device 0 is listed twice" --backend=cuda --gpus=0,0
refused "is empty" --backend=cuda --gpus=
refused "'x' is not a CUDA device id" --backend=cuda --gpus=0,x
refused "--gpu and --gpus given together" --backend=cuda --gpu=0 --gpus=all
refused "--gpus lists CUDA devices, but the backend is cpu" --backend=cpu --gpus=0
refused "--partitions must be in" --backend=cpu --partitions=0

# shellcheck source=server_start.sh
. "$(dirname "$0")/server_start.sh"
start_server() {  # start_server PARTITIONS
  start_cpu_server --partitions="$1" --initial_capacity=3000 --memory=96MiB --data_dir="$dir/data"
}
g() { "$cli" --server=127.0.0.1:"$port" --timeout=5s "$@"; }

start_server 3
g put 1 one >/dev/null && g put 2 two >/dev/null && g put 3 three >/dev/null || fail "puts"
out=$(g get 1 2 3) || fail "get: $out"
[ "$out" = $'1\tone\n2\ttwo\n3\tthree' ] || fail "get over the partitions, in request order: $out"
stats=$(g stats)
echo "$stats" | grep -q '^keys *3$' || fail "stats total: $stats"
echo "$stats" | grep -q '^partitions *3 ' || fail "stats partitions: $stats"
[ "$(echo "$stats" | grep -c '^partition [0-2] ')" = 3 ] || fail "a line per partition: $stats"
echo "$stats" | grep -q '^memory_limit_bytes *100663296$' || fail "--memory is the server's total: $stats"
g --json stats | grep -q '"partitions":\[{"partition":0,"gpu":-1,' || fail "stats --json: $(g --json stats)"
kill -TERM "$pid"; wait "$pid" || fail "server should exit 0 on SIGTERM"
pid=""
[ "$(cat "$dir/data/PARTITIONS")" = 3 ] || fail "the data directory records its partition count"
[ -d "$dir/data/partition-2" ] || fail "a folder per partition"

"$server_bin" --listen_address=127.0.0.1:0 --metrics_address= --backend=cpu --partitions=2 \
  --data_dir="$dir/data" >"$log" 2>&1
[ $? -eq 2 ] || fail "a data directory of 3 partitions must refuse a server of 2"
grep -q "written by a server of 3 partitions, this one has 2" "$log" || fail "the refusal names both counts"

start_server 3
[ "$(g get 2)" = $'2\ttwo' ] || fail "the keys are back with the same count: $(g get 2)"
kill -TERM "$pid"; wait "$pid"
pid=""
echo "PASS"
