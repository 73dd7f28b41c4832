#!/usr/bin/env bash
# The gphkv CLI's item fields (issue 27) against a real gphkv-server process:
# put --ttl/--flags, gets printing flags, expiry and CAS, cas --cas=N (stored,
# then refused with the stale version, exit 1), touch --ttl, an item gone once
# its TTL passed, and --ttl/--flags/gets refused for uint64 keys (usage, 2).
# Usage: cli_items_test.sh SERVER_BINARY CLI_BINARY
set -uo pipefail
server_bin=$1
cli=$2
dir=$(mktemp -d)
log=$dir/server.log
# shellcheck source=server_start.sh
. "$(dirname "$0")/server_start.sh"
cleanup() { kill -9 "$pid" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- server log"; cat "$log"; exit 1; }
start_cpu_server --initial_capacity=1000 --memory=64MiB
g() { "$cli" --server=127.0.0.1:"$port" --timeout=5s "$@"; }

before=$(date +%s)
out=$(g put --ttl=100 --flags=7 session:9 data) || fail "put --ttl --flags: $out"
[ "$out" = $'session:9\tcreated (4 bytes)' ] || fail "put output: $out"
out=$(g gets session:9) || fail "gets: $out"
re=$'^session:9\tflags=7 exptime=([0-9]+) cas=([0-9]+)\tdata$'
[[ $out =~ $re ]] || fail "gets output: $out"
exptime=${BASH_REMATCH[1]}
cas=${BASH_REMATCH[2]}
after=$(date +%s)
[ "$exptime" -ge $((before + 100)) ] && [ "$exptime" -le $((after + 100)) ] || fail "exptime $exptime not 100 s ahead"
[ "$cas" -gt 0 ] || fail "cas $cas"

# cas with the version gets printed stores (with its own flags); again, it is stale.
[ "$(g cas --cas="$cas" --flags=3 session:9 new)" = $'session:9\tstored' ] || fail "cas with the current version"
out=$(g cas --cas="$cas" session:9 newer); rc=$?
[ $rc -eq 1 ] || fail "a stale cas should exit 1, got $rc: $out"
[ "$out" = $'session:9\tnot stored (ABORTED)' ] || fail "stale cas output: $out"
out=$(g cas --cas=1 missing:key v); rc=$?
[ $rc -eq 1 ] && [ "$out" = $'missing:key\tnot stored (NOT_FOUND)' ] || fail "cas of an absent key: $rc $out"
[[ $(g gets session:9) =~ ^session:9$'\t'flags=3\ exptime=0\ cas=[0-9]+$'\t'new$ ]] || fail "after cas: $(g gets session:9)"

# touch sets the expiry and keeps value and flags; a 3-second TTL runs out. (Not 1 s: an expiry is a
# whole second, so a 1-second TTL set late in a second is gone early in the next, and a loaded machine
# took that long between the touch and the gets.)
[ "$(g touch --ttl=3 session:9 missing:key)" = $'session:9\ttouched\nmissing:key\t(not found)' ] || fail "touch output"
[[ $(g gets session:9) =~ flags=3\ exptime=[1-9][0-9]*\ .*new$ ]] || fail "after touch: $(g gets session:9)"
sleep 3.1
out=$(g gets session:9); rc=$?
[ $rc -eq 1 ] && [ "$out" = $'session:9\t(not found)' ] || fail "expired item: $rc $out"

# JSON, and item fields refused for uint64 keys before anything is sent.
g put --flags=5 j:1 v >/dev/null || fail "put j:1"
[[ $(g --json gets j:1) =~ ^\{\"results\":\[\{\"key_format\":\"bytes\",.*\"found\":true,\"flags\":5,\"exptime\":0,\"cas\":[0-9]+,\"length\":1,.*\"value\":\"v\"\}\]\}$ ]] \
  || fail "gets --json: $(g --json gets j:1)"
g put --ttl=5 42 x >/dev/null 2>&1; [ $? -eq 2 ] || fail "put --ttl of a uint64 key should be a usage error"
g gets 42 >/dev/null 2>&1; [ $? -eq 2 ] || fail "gets of a uint64 key should be a usage error"
g cas session:9 v >/dev/null 2>&1; [ $? -eq 2 ] || fail "cas without --cas should be a usage error"
g get 42 >/dev/null 2>&1; [ $? -eq 1 ] || fail "the refused put stored 42"
echo "PASS"
