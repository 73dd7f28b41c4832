# shellcheck shell=bash
# Loopback ports for the servers a benchmark script starts. Sourced (from the
# repository root) by write-mix.sh, eviction-cost.sh, hit-ratio.sh,
# latency-ladder.sh and byte-keys-compare.sh.

# free_port: a port nothing listens on now (the kernel's pick on 127.0.0.1).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_port PORT [SECONDS]: returns once something listens on 127.0.0.1:PORT;
# after SECONDS (default 30) says so, naming the script, and exits 1.
wait_port() {
  local limit=${2:-30}
  for _ in $(seq 1 $((limit * 10))); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1',$1),0.2)" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "$(basename "$0" .sh): nothing listens on port $1 after $limit s" >&2
  exit 1
}
