#!/bin/sh
# gphkv-entrypoint: starts gphkv-server with flags taken from the environment,
# the way container users expect, then any arguments given to the container
# (a flag given twice takes its last value, so arguments override variables).
#
#   GPHKV_LISTEN_ADDRESS    --listen_address   (default 0.0.0.0:50051)
#   GPHKV_METRICS_ADDRESS   --metrics_address  (default 0.0.0.0:9464)
#   GPHKV_BACKEND           --backend          (auto|cuda|cpu)
#   GPHKV_GPUS              --gpus             (all, the default, or a list: 0,1)
#   GPHKV_GPU               --gpu              (deprecated: one device, --gpus=N)
#   GPHKV_LOG_LEVEL         --log_level
#   GPHKV_TLS_CERT          --tls_cert         (TLS on the gRPC port: PEM chain)
#   GPHKV_TLS_KEY           --tls_key          (its PEM key)
#   GPHKV_TLS_CLIENT_CA     --tls_client_ca    (require client certificates: mTLS)
#   GPHKV_MEMORY            --memory, as given (e.g. 48GiB)
#   GPHKV_MEMORY_PERCENT    --memory as this percentage of the container's
#                           memory limit, read from GPHKV_MEMORY_LIMIT_BYTES
#                           (Kubernetes' Downward API, limits.memory) or else
#                           from the cgroup (docker/podman run --memory).
#                           Ignored when GPHKV_MEMORY is set.
#   GPHKV_DATA_DIR          --data_dir (the image sets /var/lib/gphkv, its
#                           volume; empty: the server keeps nothing on disk)
#   GPHKV_FSYNC             --fsync (always|everysec|never)
#   GPHKV_MEMCACHED_ADDRESS --memcached_address (memcached's text protocol
#                           on a second port; the image sets 0.0.0.0:11211;
#                           empty: no memcached port)
#
# exec keeps gphkv-server as the container's PID 1, so SIGTERM reaches it and
# its exit status is the container's.
set -eu

server=${GPHKV_SERVER_BIN:-/opt/gphkv/bin/gphkv-server}

die() {
  echo "gphkv-entrypoint: $*" >&2
  exit 64
}

cgroup_memory_limit() {
  if [ -r /sys/fs/cgroup/memory.max ]; then
    cat /sys/fs/cgroup/memory.max
  elif [ -r /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
    cat /sys/fs/cgroup/memory/memory.limit_in_bytes
  fi
}

is_count() {
  case "$1" in '' | *[!0-9]*) return 1 ;; *) return 0 ;; esac
}

memory=${GPHKV_MEMORY:-}
if [ -z "$memory" ] && [ -n "${GPHKV_MEMORY_PERCENT:-}" ]; then
  percent=$GPHKV_MEMORY_PERCENT
  is_count "$percent" && [ "$percent" -ge 1 ] && [ "$percent" -le 100 ] ||
    die "GPHKV_MEMORY_PERCENT must be a whole number from 1 to 100, not '$percent'"
  limit=${GPHKV_MEMORY_LIMIT_BYTES:-$(cgroup_memory_limit)}
  # cgroup v1 reports "no limit" as a huge number; v2 as "max".
  is_count "$limit" && [ "$limit" -lt 4611686018427387904 ] ||
    die "GPHKV_MEMORY_PERCENT is set but the container has no memory limit ('$limit');" \
      "set one (--memory, resources.limits.memory) or give GPHKV_MEMORY"
  memory=$((limit / 100 * percent))
  echo "gphkv-entrypoint: --memory=$memory ($percent% of the $limit-byte memory limit)" >&2
fi

exec "$server" \
  --listen_address="${GPHKV_LISTEN_ADDRESS:-0.0.0.0:50051}" \
  --metrics_address="${GPHKV_METRICS_ADDRESS:-0.0.0.0:9464}" \
  ${GPHKV_BACKEND:+"--backend=$GPHKV_BACKEND"} \
  ${GPHKV_GPUS:+"--gpus=$GPHKV_GPUS"} \
  ${GPHKV_GPU:+"--gpu=$GPHKV_GPU"} \
  ${GPHKV_LOG_LEVEL:+"--log_level=$GPHKV_LOG_LEVEL"} \
  ${GPHKV_TLS_CERT:+"--tls_cert=$GPHKV_TLS_CERT"} \
  ${GPHKV_TLS_KEY:+"--tls_key=$GPHKV_TLS_KEY"} \
  ${GPHKV_TLS_CLIENT_CA:+"--tls_client_ca=$GPHKV_TLS_CLIENT_CA"} \
  ${memory:+"--memory=$memory"} \
  ${GPHKV_DATA_DIR:+"--data_dir=$GPHKV_DATA_DIR"} \
  ${GPHKV_FSYNC:+"--fsync=$GPHKV_FSYNC"} \
  ${GPHKV_MEMCACHED_ADDRESS:+"--memcached_address=$GPHKV_MEMCACHED_ADDRESS"} \
  "$@"
