#!/usr/bin/env bash
# The README's main job: install, build, start gphkv-server on loopback (the
# CUDA backend when a GPU is present, else the CPU one), run a short
# TaoBench-style load against it with gphkv-loadgen, and print the report.
#
# Knobs (environment): BACKEND (auto|cuda|cpu), KEYS (items loaded, default
# 1000000), DURATION (measured seconds, default 10), LOADGEN_ARGS (more flags,
# e.g. "--mode=open --rate=20000"). Outputs in build/demo/: the server log,
# loadgen.json (full report) and loadgen.svg (throughput and latency over time).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh

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

# --wait_ready bounds the wait for the server's first answer.
# shellcheck disable=SC2086
build/loadgen/gphkv-loadgen --target=gphkv --address=127.0.0.1:"$PORT" \
  --keys="${KEYS:-1000000}" --warmup=2 --duration="${DURATION:-10}" --wait_ready=60 \
  --label="run-demo, $BACKEND backend" --json=build/demo/loadgen.json --plot=build/demo/loadgen.svg \
  ${LOADGEN_ARGS:-}
echo "run-demo: full report in build/demo/loadgen.json, plot in build/demo/loadgen.svg"
