#!/usr/bin/env bash
# The soak on the device machine (CUDA backend, GPU memory sampled too): runs
# scripts/soak.sh from the bundle of scripts/device-bundle-service.sh, detached,
# so it may outlast one device command (at most 10 minutes); each call waits
# for it at most WAIT_S seconds, then copies what it has so far to
# $OUT/soak-cuda/ (the data directory and binaries stay). Call it again until
# it says "done" (exit 0; exit 3: still running).
#
#   bash scripts/device-soak.sh      # SOAK_S=720 by default: call twice
#
# Here, afterwards (files_at is the folder the device's $OUT came back to):
#   python3 scripts/soak-summary.py FILES_AT/soak-cuda --warmup_s 180 \
#     --json bench/results/soak_cuda_$(cat FILES_AT/soak-cuda/COMMIT).json --plot docs/soak-cuda.svg
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
BUNDLE=${BUNDLE:-.device-svc}
dir=${SOAK_DIR:-/tmp/gphkv-soak-cuda}
out=${OUT:-$PWD/out}/soak-cuda
if [ ! -e "$dir/config.txt" ]; then
  [ -x "$BUNDLE/bin/gphkv-server" ] || { echo "device-soak: no bundle at $BUNDLE (scripts/device-bundle-service.sh)" >&2; exit 2; }
  mkdir -p "$dir"
  BACKEND=${BACKEND:-cuda} BUNDLE="$BUNDLE" SOAK_S=${SOAK_S:-720} OUT="$dir" \
    setsid nohup bash scripts/soak.sh >"$dir.log" 2>&1 </dev/null &
  echo "device-soak: started, SOAK_S=${SOAK_S:-720}, in $dir"
  sleep 5
fi
deadline=$((SECONDS + ${WAIT_S:-560}))
while [ ! -e "$dir/server_exit" ] && [ $SECONDS -lt $deadline ]; do sleep 5; done
mkdir -p "$out"
for f in "$dir"/*; do
  case "$(basename "$f")" in data | bin) ;; *) cp -r "$f" "$out/" ;; esac
done
cp "$dir.log" "$out/soak.log" 2>/dev/null
cp "$BUNDLE/COMMIT" "$out/COMMIT" 2>/dev/null
tail -3 "$out/samples.csv" 2>/dev/null
if [ -e "$dir/server_exit" ]; then
  echo "device-soak: done; $(tail -1 "$dir.log")"
  exit 0
fi
echo "device-soak: still running (call again); $(($(date +%s) - $(stat -c %Y "$dir/config.txt"))) s since it started"
exit 3
