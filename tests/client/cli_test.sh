#!/usr/bin/env bash
# The gphkv CLI against a real gphkv-server process on loopback: every
# command, text and --json output, exit codes, and SIGTERM -> exit 0; the
# server keeps a data directory, so a second server on it has the keys.
# Usage: cli_test.sh SERVER_BINARY CLI_BINARY
set -uo pipefail
server_bin=$1
cli=$2
dir=$(mktemp -d)
log=$dir/server.log
# shellcheck source=server_start.sh
. "$(dirname "$0")/server_start.sh"
start_server() { start_cpu_server --initial_capacity=1000 --memory=64MiB --data_dir="$dir/data"; }
cleanup() { kill -9 "$pid" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- server log"; cat "$log"; exit 1; }
start_server
g() { "$cli" --server=127.0.0.1:"$port" --timeout=5s "$@"; }

g health >/dev/null || fail "health should exit 0 on a serving server"
[ "$(g put 7 hello)" = $'7\tcreated (5 bytes)' ] || fail "put text output"
[ "$(g put 7 world)" = $'7\treplaced (5 bytes)' ] || fail "put replace output"
printf 'from\nstdin' | g put 8 - >/dev/null || fail "put from stdin"
head -c 3000 /dev/urandom >"$dir/blob"
g put 9 --file="$dir/blob" >/dev/null || fail "put --file"
g --raw get 9 >"$dir/blob.out" || fail "get --raw"
cmp -s "$dir/blob" "$dir/blob.out" || fail "binary value did not round-trip"
out=$(g get 7 8 10); rc=$?
[ $rc -eq 1 ] || fail "get with a missing key should exit 1, got $rc"
echo "$out" | grep -q $'^7\tworld$' || fail "get text output: $out"
echo "$out" | grep -q $'^10\t(not found)$' || fail "missing key output: $out"
json=$(g --json get 7 10)
[ "$json" = '{"results":[{"key":"7","found":true,"length":5,"value_base64":"d29ybGQ=","value":"world"},{"key":"10","found":false}]}' ] \
  || fail "get --json: $json"
[ "$(g --json del 7 10)" = '{"results":[{"key":"7","deleted":true},{"key":"10","deleted":false}]}' ] || fail "del --json"
g stats | grep -q '^backend *cpu$' || fail "stats text"
g --json stats | grep -q '"keys":2,' || fail "stats --json: $(g --json stats)"
g stats | grep -q "^data_dir *$dir/data$" || fail "stats shows the data directory: $(g stats)"
g stats | grep -q '^fsync *everysec$' || fail "stats shows the fsync setting: $(g stats)"
g --json stats | grep -q "\"data_dir\":{\"dir\":\"$dir/data\",\"fsync\":\"everysec\"" \
  || fail "stats --json shows the data directory: $(g --json stats)"
# The table is at its initial size: nothing to shrink.
g --json shrink | grep -q '^{"started":false,"keys":2,' || fail "shrink --json: $(g --json shrink)"
g shrink | grep -q '^nothing to do' || fail "shrink text: $(g shrink)"
g --key_format=u64 get notakey >/dev/null 2>&1; [ $? -eq 2 ] || fail "a key that is no number under --key_format=u64 should be a usage error (2)"
g --key_format=hex get 0 >/dev/null 2>&1; [ $? -eq 2 ] || fail "odd hex under --key_format=hex should be a usage error (2)"
g --key_format=nope get 1 >/dev/null 2>&1; [ $? -eq 2 ] || fail "an unknown --key_format should be a usage error (2)"
g frobnicate >/dev/null 2>&1; [ $? -eq 2 ] || fail "unknown command should exit 2"
# Conditional writes: a refusal exits 1 and changes nothing; counters print their number.
[ "$(g add c:1 5)" = $'c:1\tstored' ] || fail "add of an absent key"
out=$(g add c:1 6); rc=$?
[ $rc -eq 1 ] && [ "$out" = $'c:1\tnot stored (ALREADY_EXISTS)' ] || fail "add of a present key: rc $rc, $out"
out=$(g replace c:none 6); rc=$?
[ $rc -eq 1 ] && [ "$out" = $'c:none\tnot stored (NOT_FOUND)' ] || fail "replace of an absent key: rc $rc, $out"
[ "$(g incr c:1 10)" = $'c:1\t15' ] || fail "incr"
[ "$(g decr c:1 100)" = $'c:1\t0' ] || fail "decr stops at 0"
[ "$(g incr c:1)" = $'c:1\t1' ] || fail "incr's delta defaults to 1"
g --json incr c:1 2 | grep -q '"stored":true,"value":3}$' || fail "incr --json: $(g --json get c:1)"
g incr 8 1 >/dev/null 2>&1; [ $? -eq 3 ] || fail "incr of a value that is no number should fail (3)"
g incr c:1 x >/dev/null 2>&1; [ $? -eq 3 ] || fail "a delta that is no number should fail (3)"
[ "$(g append 8 '!')" = $'8\tstored' ] || fail "append"
[ "$(g --raw get 8 c:1)" = $'from\nstdin!3' ] || fail "values after the conditional writes: $(g get 8 c:1)"
g get c:none >/dev/null; [ $? -eq 1 ] || fail "a refused replace stored nothing"

kill -TERM "$pid"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
wait "$pid"; rc=$?
[ $rc -eq 0 ] || fail "server should exit 0 on SIGTERM, got $rc"
grep -q "exit 0" "$log" || fail "server log lacks its shutdown"
grep -q "data dir: snapshot .* 3 pairs" "$log" || fail "the server should take a final snapshot of its 3 keys"
# A second server on the data directory has the keys.
start_server
[ "$(g --raw get 8)" = $'from\nstdin!' ] || fail "a restarted server should have key 8 appended to: $(g get 8)"
[ "$(g --raw get c:1)" = '3' ] || fail "a restarted server should have the counter's last number: $(g get c:1)"
g stats | grep -q '^recovery .*: 3 keys$' || fail "stats shows what recovery found: $(g stats)"
kill -TERM "$pid"; wait "$pid"
# A stopped server is not healthy.
"$cli" --server=127.0.0.1:"$port" --timeout=1s health >/dev/null 2>&1 && fail "health should fail with no server"
echo "PASS"
