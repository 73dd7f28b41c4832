#!/usr/bin/env bash
# The gphkv CLI's byte keys (issue 26) against a real gphkv-server process:
# put/get/del of text keys, --key_format=bytes and hex (binary keys with NUL),
# a 250-byte key, the byte key "42" apart from the uint64 key 42, a get and a
# del of both kinds in one command, and how keys print (text and --json).
# Usage: cli_byte_keys_test.sh SERVER_BINARY CLI_BINARY
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

out=$(g put user:42:profile hello) || fail "put of a byte key: $out"
[ "$out" = $'user:42:profile\tcreated (5 bytes)' ] || fail "put text output: $out"
[ "$(g put user:42:profile world)" = $'user:42:profile\treplaced (5 bytes)' ] || fail "put replace output"
[ "$(g get user:42:profile)" = $'user:42:profile\tworld' ] || fail "get of a byte key: $(g get user:42:profile)"

# "42" as a byte key and 42 as a uint64 key are two keys.
g put 42 number >/dev/null || fail "put 42"
[ "$(g --key_format=bytes put 42 text)" = $'"42"\tcreated (4 bytes)' ] || fail "the byte key \"42\" should be new"
[ "$(g get 42)" = $'42\tnumber' ] || fail "42 keeps its value: $(g get 42)"
[ "$(g --key_format=bytes get 42)" = $'"42"\ttext' ] || fail "the byte key \"42\": $(g --key_format=bytes get 42)"

# Binary keys in hex: NUL inside, printed with C escapes.
[ "$(g --key_format=hex put 00ff6b00 bin)" = $'"\\x00\\xffk\\x00"\tcreated (3 bytes)' ] \
  || fail "put of a binary key: $(g --key_format=hex put 00ff6b00 bin)"
[ "$(g --key_format=hex get 00ff6b00)" = $'"\\x00\\xffk\\x00"\tbin' ] || fail "get of a binary key"
[ "$(g --key_format=hex get 00ff6b)" = $'"\\x00\\xffk"\t(not found)' ] || fail "a prefix of a key is another key"

# The longest key by default, 250 bytes; one more is the server's to refuse.
long=$(printf 'k%.0s' $(seq 250))
g put "$long" long >/dev/null || fail "put of a 250-byte key"
[ "$(g --raw get "$long")" = long ] || fail "get of a 250-byte key"
g put "${long}k" toolong >/dev/null 2>&1; [ $? -eq 3 ] || fail "a 251-byte key should be refused by the server (3)"

# Both kinds in one command: answered in the order given.
out=$(g get 42 user:42:profile 7 missing:key); rc=$?
[ $rc -eq 1 ] || fail "get with missing keys should exit 1, got $rc"
[ "$out" = $'42\tnumber\nuser:42:profile\tworld\n7\t(not found)\nmissing:key\t(not found)' ] || fail "mixed get: $out"
json=$(g --json get user:42:profile 42)
[ "$json" = '{"results":[{"key_format":"bytes","key_base64":"dXNlcjo0Mjpwcm9maWxl","key":"user:42:profile","found":true,"length":5,"value_base64":"d29ybGQ=","value":"world"},{"key":"42","found":true,"length":6,"value_base64":"bnVtYmVy","value":"number"}]}' ] \
  || fail "get --json: $json"
[ "$(g --json del user:42:profile 42)" = '{"results":[{"key_format":"bytes","key_base64":"dXNlcjo0Mjpwcm9maWxl","key":"user:42:profile","deleted":true},{"key":"42","deleted":true}]}' ] \
  || fail "del --json: $(g --json del user:42:profile 42)"
[ "$(g delete user:42:profile)" = $'user:42:profile\t(not found)' ] || fail "delete of a deleted byte key"
[ "$(g --key_format=bytes get 42)" = $'"42"\ttext' ] || fail "deleting 42 left the byte key \"42\""
echo "PASS"
