#!/usr/bin/env bash
# Gathers what a service run on the device machine needs into one git-ignored
# folder: gphkv-server, gphkv, gphkv-loadgen (with their shared libraries, by
# deploy/bundle.sh), service_bench, cpu_table_bench, null_server and lru_hit_ratio beside them, and
# memcached unpacked from Debian's packages for the side-by-side run; and the
# data directory's run: durability-bench.sh with store_snapshot_bench and
# durable_server_tests (docs/durability.md, "Measuring").
# docs/gpu.md has the device command line.
#
#   scripts/device-bundle-service.sh [DEST]   (DEST defaults to .device-svc/; BUILD_DIR to build-cuda/)
#
# BUNDLE_TESTS=1 also bundles the server's GoogleTest binaries (their CUDA
# tests run on the device; run them from DEST/bin with LD_LIBRARY_PATH=DEST/lib).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$repo/.device-svc}
build=${BUILD_DIR:-$repo/build-cuda}

cmake -S "$repo" -B "$build" -G Ninja >/dev/null
ninja -C "$build" gphkv-server gphkv gphkv-loadgen service_bench cpu_table_bench null_server store_snapshot_bench \
  lru_hit_ratio durable_server_tests
if [ "${BUNDLE_TESTS:-0}" = 1 ]; then ninja -C "$build" server_unit_tests service_tests; fi
bash "$repo/deploy/bundle.sh" "$build" "$dest"
# The benchmarks load the same libraries as the server (run with LD_LIBRARY_PATH=DEST/lib).
for b in service_bench cpu_table_bench null_server store_snapshot_bench lru_hit_ratio; do
  install -m 0755 "$build/bench/$b" "$dest/bin/$b"
  strip --strip-debug "$dest/bin/$b"
done
install -m 0755 "$build/tests/server/durable_server_tests" "$dest/bin/durable_server_tests"
strip --strip-debug "$dest/bin/durable_server_tests"
if [ "${BUNDLE_TESTS:-0}" = 1 ]; then
  for t in server_unit_tests service_tests; do
    install -m 0755 "$build/tests/server/$t" "$dest/bin/$t"
    strip --strip-debug "$dest/bin/$t"
  done
fi
missing=$(LD_LIBRARY_PATH="$dest/lib" ldd "$dest"/bin/* 2>/dev/null | grep 'not found' || true)
[ -z "$missing" ] || { echo "device-bundle-service: libraries missing from the bundle: $missing" >&2; exit 1; }

# memcached and the libraries Ubuntu's base may lack, from Debian's packages.
debs=$(mktemp -d)
(cd "$debs" && apt-get download -q memcached libevent-2.1-7 libsasl2-2 >/dev/null)
mkdir -p "$dest/memcached"
for deb in "$debs"/*.deb; do dpkg -x "$deb" "$dest/memcached"; done
rm -rf "$debs"
cp "$repo/scripts/loadgen-compare.sh" "$repo/scripts/durability-bench.sh" "$dest/"
# The commit the binaries were built from (the device's copy of the tree has no git).
git -C "$repo" rev-parse --short=12 HEAD >"$dest/COMMIT"
du -sh "$dest"
echo "bundle ready: $dest"
