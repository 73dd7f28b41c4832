#!/usr/bin/env bash
# Issue 30's interleaved comparisons on a two-GPU host, in one device call:
# blocks of scripts/gpus-scaling.sh (each block: the three shapes, 100- and
# 1000-key gets, one round), variants in turn, one tarball per block in OUT
# (the device tool returns a bounded number of files, not the runs' dozens).
#
#   MODE=malloc  blocks A B C A B C: the load generator's default allocator (A),
#                its glibc defaults (B), the servers tuned as well (C)
#   MODE=pools   blocks N O N O: this build (N) against OLD_SERVER (O), e.g. a
#                build with a completion pool per partition
#   MODE=window  the same at twice the client's window (--coalesce_in_flight=4): N O N
#
#   BUNDLE=.device-x2 OUT=$OUT MODE=malloc bash scripts/gpus-scaling-blocks.sh
#   BUNDLE=.device-x2 OUT=$OUT MODE=pools OLD_SERVER=.device-x2/bin/gphkv-server-perpart bash scripts/gpus-scaling-blocks.sh
#
# Back here, each block: python3 scripts/gpus-scaling-results.py BLOCK_DIR.
set -u
cd "$(dirname "$0")/.." || exit 1
B=${BUNDLE:-.device-x2}
OUT=${OUT:?OUT: where the tarballs go}
MODE=${MODE:-malloc}
case $MODE in
  malloc | pools | window) ;;
  *)
    echo "gpus-scaling-blocks: MODE is malloc, pools or window" >&2
    exit 2
    ;;
esac
nvidia-smi -L
nproc
UNTUNED="--malloc_trim_threshold_mib=0 --malloc_mmap_threshold_mib=0"
TUNED="--malloc_trim_threshold_mib=256 --malloc_mmap_threshold_mib=32"
if [ "$MODE" != malloc ]; then
  # The other build as a bundle of its own beside this one's libraries.
  old=/tmp/gpus-scaling-old
  mkdir -p "$old/bin"
  cp "${OLD_SERVER:?OLD_SERVER: the server to compare against}" "$old/bin/gphkv-server"
  cp "$B/bin/gphkv-loadgen" "$old/bin/"
  ln -sfn "$(cd "$B" && pwd)/lib" "$old/lib"
  echo "old: $OLD_SERVER" >"$old/COMMIT"
fi
block() {  # block NAME ENV...: one block, its tarball into OUT
  local name=$1
  shift
  echo "=== $name $(date -u +%T)"
  env "$@" OUT="/tmp/gpus-scaling-blocks/$name" bash scripts/gpus-scaling.sh 2>&1 | grep -E "rc=|commit"
  cp "/tmp/gpus-scaling-blocks/$name/gpus-scaling.tgz" "$OUT/$name.tgz"
}
common=(ROUNDS=1 "SIZES=100 1000" STEP_S=3)
case $MODE in
  malloc)
    for r in 1 2; do
      block "A$r" BUNDLE="$B" "${common[@]}"
      block "B$r" BUNDLE="$B" "${common[@]}" LOADGEN_ARGS="$UNTUNED"
      block "C$r" BUNDLE="$B" "${common[@]}" SERVER_ARGS="$TUNED"
    done
    ;;
  pools)
    for r in 1 2; do
      block "N$r" BUNDLE="$B" "${common[@]}"
      block "O$r" BUNDLE="$old" "${common[@]}"
    done
    ;;
  window)
    block W_N1 BUNDLE="$B" "${common[@]}" LOADGEN_ARGS=--coalesce_in_flight=4
    block W_O1 BUNDLE="$old" "${common[@]}" LOADGEN_ARGS=--coalesce_in_flight=4
    block W_N2 BUNDLE="$B" "${common[@]}" LOADGEN_ARGS=--coalesce_in_flight=4
    ;;
esac
echo "=== end $(date -u +%T)"
