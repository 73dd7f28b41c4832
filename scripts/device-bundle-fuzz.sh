#!/usr/bin/env bash
# Gathers what scripts/device-fuzz.sh runs on the device machine into one
# git-ignored folder: request_fuzzer (clang, libFuzzer, ASan + UBSan, from
# build-fuzz/ by scripts/fuzz.sh) and its seeds, server_unit_tests of the CUDA
# build (the DeviceValueHeap tests), every shared library they load but
# glibc's and the GPU driver's, and device-fuzz.sh itself.
#
#   scripts/device-bundle-fuzz.sh [DEST]   (DEST defaults to .device-fuzz/; BUILD_DIR to build-cuda/)
#
# Layout: DEST/bin/{request_fuzzer,server_unit_tests}, DEST/seeds/, DEST/lib/,
# DEST/device-fuzz.sh, DEST/COMMIT. On the device: bash DEST/device-fuzz.sh.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$repo/.device-fuzz}
build=${BUILD_DIR:-$repo/build-cuda}

bash "$repo/scripts/fuzz.sh" --build-only
cmake -S "$repo" -B "$build" -G Ninja >/dev/null
ninja -C "$build" server_unit_tests
if ! "$build/tests/server/server_unit_tests" --gtest_list_tests | grep -q '^DeviceValueHeap\.'; then
  echo "device-bundle-fuzz: $build is not a CUDA build (no DeviceValueHeap tests)" >&2
  exit 1
fi

rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib"
# The fuzzer keeps its debug info: its reports name lines without a symbolizer's help.
install -m 0755 "$repo/build-fuzz/tests/fuzz/request_fuzzer" "$dest/bin/"
install -m 0755 "$build/tests/server/server_unit_tests" "$dest/bin/"
strip --strip-debug "$dest/bin/server_unit_tests"
cp -r "$repo/build-fuzz/seeds" "$dest/seeds"
install -m 0755 "$repo/scripts/device-fuzz.sh" "$dest/"

# Every resolved library but glibc's and the driver's (deploy/bundle.sh's rule).
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread|librt\.so|libresolv\.so|libcuda\.so|libnvidia-)'
for bin in "$dest"/bin/*; do
  ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
    if ! [[ $name =~ $skip ]] && [ ! -e "$dest/lib/$name" ]; then cp -L "$path" "$dest/lib/$name"; fi
  done
done
missing=$(LD_LIBRARY_PATH="$dest/lib" ldd "$dest"/bin/* | grep 'not found' || true)
[ -z "$missing" ] || { echo "device-bundle-fuzz: libraries missing from the bundle: $missing" >&2; exit 1; }
# The commit the binaries were built from (the device's copy of the tree has no git).
git -C "$repo" rev-parse --short=12 HEAD >"$dest/COMMIT"
du -sh "$dest"
echo "bundle ready: $dest (on the device: bash $(basename "$dest")/device-fuzz.sh, carrying $(basename "$dest"))"
