#!/usr/bin/env bash
# What TLS costs the batched-get rate: the same gphkv-loadgen run against one
# gphkv-server in plain text and one over TLS (a throwaway CA and server
# certificate made here with openssl), for each client API, REPS rounds with
# the two interleaved; prints each run's get keys/s and, per API, the median of
# the rounds' TLS/plain ratios (certificates from deploy/tls-certs.sh). Both servers run for the whole measurement
# (an idle one costs nothing), each loaded once.
#
#   scripts/tls-cost.sh                      # build/, CPU backend, 5 rounds of 5 s
#   REPS=9 DURATION=10 BACKEND=cuda APIS="coalesced unary" scripts/tls-cost.sh build
#
# Knobs (environment): REPS [5], DURATION [5] and WARMUP [1] seconds, KEYS
# [200000], APIS ["coalesced unary"], BACKEND [cpu], SERVER_ARGS (more
# gphkv-server flags), LOADGEN_ARGS (more gphkv-loadgen flags: --threads,
# --connections, --depth...), MTLS=1 (require client certificates too).
set -euo pipefail
build=${1:-build}
reps=${REPS:-5}
duration=${DURATION:-5}
warmup=${WARMUP:-1}
keys=${KEYS:-200000}
apis=${APIS:-coalesced unary}
backend=${BACKEND:-cpu}
server_bin=$build/server/gphkv-server
loadgen_bin=$build/loadgen/gphkv-loadgen
for b in "$server_bin" "$loadgen_bin"; do [ -x "$b" ] || { echo "tls-cost: $b is not built" >&2; exit 2; }; done
command -v openssl >/dev/null || { echo "tls-cost: openssl is not installed" >&2; exit 2; }

dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

# A throwaway CA, a server certificate for localhost and 127.0.0.1, a client one.
"$(dirname "$0")/../deploy/tls-certs.sh" "$dir/certs" >/dev/null
certs=$dir/certs

# start NAME FLAGS...: a server on a port the kernel picks; sets port_NAME.
start() {
  local name=$1
  shift
  "$server_bin" --listen_address=127.0.0.1:0 --metrics_address= --backend="$backend" ${SERVER_ARGS:-} "$@" \
    >"$dir/$name.log" 2>&1 &
  pids+=($!)
  local port=""
  for _ in $(seq 300); do
    port=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$dir/$name.log" | head -1)
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || { echo "tls-cost: the $name server did not start:" >&2; cat "$dir/$name.log" >&2; exit 1; }
  printf -v "port_$name" '%s' "$port"
}
tls_server=(--tls_cert="$certs/tls.crt" --tls_key="$certs/tls.key")
tls_client=(--tls_ca="$certs/ca.crt")
if [ "${MTLS:-0}" = 1 ]; then
  tls_server+=(--tls_client_ca="$certs/ca.crt")
  tls_client+=(--tls_cert="$certs/client.crt" --tls_key="$certs/client.key")
fi
start plain
start tls "${tls_server[@]}"

# loadgen NAME ARGS...: gphkv-loadgen against server NAME (TLS flags for the TLS one).
loadgen() {
  local name=$1 port_var=port_$1
  shift
  local args=(--target=gphkv --address=127.0.0.1:${!port_var} --keys="$keys" --write_fraction=0 --progress=false)
  [ "$name" = tls ] && args+=("${tls_client[@]}")
  "$loadgen_bin" "${args[@]}" "$@" ${LOADGEN_ARGS:-} >"$dir/run.log" 2>&1 || {
    echo "tls-cost: gphkv-loadgen failed:" >&2
    cat "$dir/run.log" >&2
    exit 1
  }
}
# run NAME API: one measured run on the loaded server; prints get keys/s.
run() {
  loadgen "$1" --api="$2" --load=false --warmup="$warmup" --duration="$duration" --json="$dir/run.json"
  python3 -c 'import json,sys; print("%.0f" % json.load(open(sys.argv[1]))["results"]["by_type"]["get"]["keys_per_s"])' \
    "$dir/run.json"
}

loadgen plain --warmup=0 --duration=0.2
loadgen tls --warmup=0 --duration=0.2
echo "tls-cost: $(nproc) cores, backend $backend, $keys keys, $reps rounds of ${duration} s per API$([ "${MTLS:-0}" = 1 ] && echo ', mutual TLS')"
for api in $apis; do
  ratios=()
  for r in $(seq "$reps"); do
    # Alternate which goes first, so drift in the machine's load falls on both.
    if ((r % 2)); then
      plain=$(run plain "$api")
      tls=$(run tls "$api")
    else
      tls=$(run tls "$api")
      plain=$(run plain "$api")
    fi
    ratio=$(python3 -c "print('%.3f' % ($tls / $plain))")
    ratios+=("$ratio")
    printf '%-10s round %d: plain %10s get keys/s, TLS %10s, TLS/plain %s\n' "$api" "$r" "$plain" "$tls" "$ratio"
  done
  printf '%-10s median TLS/plain over %d rounds: %s\n' "$api" "$reps" \
    "$(printf '%s\n' "${ratios[@]}" | sort -n | python3 -c 'import sys; v=[float(l) for l in sys.stdin]; print("%.3f" % v[len(v)//2])')"
done
