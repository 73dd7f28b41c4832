# Sourced by the CLI's shell tests: start_cpu_server FLAGS... starts
# $server_bin on 127.0.0.1 (a port the kernel picks, no metrics endpoint, CPU
# backend) with FLAGS, logging to $log, and waits up to 10 s for the port it
# names there; sets $pid and $port, or calls fail.
start_cpu_server() {
  "$server_bin" --listen_address=127.0.0.1:0 --metrics_address= --backend=cpu "$@" >"$log" 2>&1 &
  pid=$!
  port=""
  for _ in $(seq 100); do
    port=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$log" | head -1)
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || fail "server did not report its port"
}
