#!/bin/sh
# gphkv-healthcheck: the image's HEALTHCHECK. Asks the server's gRPC health
# service (grpc.health.v1) through the CLI, on the port the entrypoint gave
# --listen_address; exits 0 only when the server answers SERVING.
set -eu
listen=${GPHKV_LISTEN_ADDRESS:-0.0.0.0:50051}
port=${listen##*:}
exec /opt/gphkv/bin/gphkv --server="127.0.0.1:$port" --timeout=2s health
