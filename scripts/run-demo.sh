#!/usr/bin/env bash
# The README's main job: install what the demo builds and runs with
# (scripts/deps/build.txt, demo.txt), build gphkv-server, gphkv-loadgen and the
# gphkv CLI (nothing else: no tests, no benchmarks), start the server on
# loopback (the CUDA backend when a GPU is present, else the CPU one), run a
# short TaoBench-style load against it through the coalescing client
# (gphkv::Client, --api=coalesced), and print the report and the server's stats.
#
# Knobs (environment): BACKEND (auto|cuda|cpu), KEYS (items loaded, default
# 1000000), DURATION (measured seconds, default 10), LOADGEN_ARGS (more flags,
# e.g. "--mode=open --rate=20000"). Outputs in build/demo/: the server log,
# loadgen.json (full report) and loadgen.svg (throughput and latency over time).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh build demo
bash scripts/build.sh gphkv-server gphkv-loadgen gphkv

BACKEND=${BACKEND:-auto}
if [ "$BACKEND" = auto ]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then BACKEND=cuda; else BACKEND=cpu; fi
fi
PORT=${PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}
mkdir -p build/demo

echo "run-demo: gphkv-server on 127.0.0.1:$PORT, backend $BACKEND"
build/server/gphkv-server --listen_address=127.0.0.1:"$PORT" --metrics_address= --backend="$BACKEND" \
  >build/demo/server.log 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true' EXIT

# The coalescing client is how an application should talk to gphkv (docs/service.md,
# "The C++ client"): concurrent requests share one stream's messages.
# --wait_ready bounds the wait for the server's first answer.
echo "run-demo: gphkv-loadgen through the coalescing client (gphkv::Client, --api=coalesced)"
# shellcheck disable=SC2086
build/loadgen/gphkv-loadgen --target=gphkv --api=coalesced --address=127.0.0.1:"$PORT" \
  --keys="${KEYS:-1000000}" --warmup=2 --duration="${DURATION:-10}" --wait_ready=60 --server_pid=$server \
  --label="run-demo, $BACKEND backend, coalescing client" --json=build/demo/loadgen.json \
  --plot=build/demo/loadgen.svg ${LOADGEN_ARGS:-}
echo "run-demo: the server now (build/client/gphkv --server=127.0.0.1:$PORT stats):"
build/client/gphkv --server=127.0.0.1:"$PORT" stats | grep -E '^(backend|device|keys|load_factor|table_bytes|value_heap_bytes|batches|batched_keys) '
echo "run-demo: full report in build/demo/loadgen.json, plot in build/demo/loadgen.svg"
