#!/bin/sh
# gphkv-healthcheck: the image's HEALTHCHECK (and the Kubernetes probes'
# command under TLS: deploy/k8s/tls). Asks the server's gRPC health service
# (grpc.health.v1) through the CLI, on the port the entrypoint gave
# --listen_address; exits 0 only when the server answers SERVING.
#
# With GPHKV_TLS_CERT set (the server speaks TLS) it connects over TLS,
# trusting GPHKV_TLS_CA (the CA that signed the server's certificate; unset:
# the system's roots) and checking the certificate for the name
# GPHKV_TLS_SERVER_NAME (default localhost, which it must carry). When
# GPHKV_TLS_CLIENT_CA is set too (mTLS) it shows the server's own certificate
# and key as its client certificate, so that certificate must be signed by
# the client CA and allowed for client authentication.
set -eu
listen=${GPHKV_LISTEN_ADDRESS:-0.0.0.0:50051}
port=${listen##*:}
cli=${GPHKV_CLI_BIN:-/opt/gphkv/bin/gphkv}
if [ -z "${GPHKV_TLS_CERT:-}" ]; then
  exec "$cli" --server="127.0.0.1:$port" --timeout=2s health
fi
set -- --tls --tls_server_name="${GPHKV_TLS_SERVER_NAME:-localhost}"
[ -n "${GPHKV_TLS_CA:-}" ] && set -- "$@" --tls_ca="$GPHKV_TLS_CA"
[ -n "${GPHKV_TLS_CLIENT_CA:-}" ] && set -- "$@" --tls_cert="$GPHKV_TLS_CERT" --tls_key="${GPHKV_TLS_KEY:-}"
exec "$cli" --server="127.0.0.1:$port" --timeout=2s "$@" health
