#!/usr/bin/env bash
# Gathers the GPU test and benchmark binaries, and the shared libraries they
# need beyond the C/C++ runtime, into one git-ignored folder that the device
# machine's call carries (docs/gpu.md).
#
#   scripts/device-bundle.sh [DEST]      (DEST defaults to .device/ in this checkout)
#
# Layout: DEST/bin/{engine_tests,cuda_engine_tests,engine_bench}, DEST/lib/*.so*,
# DEST/device-run.sh. The build is configured afresh so engine_bench records
# the commit it was built from.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$repo/.device}
build=${BUILD_DIR:-$repo/build}
targets=(engine_tests cuda_engine_tests engine_bench)

cmake -S "$repo" -B "$build" -G Ninja >/dev/null
ninja -C "$build" "${targets[@]}"

rm -rf "$dest/bin" "$dest/lib"
mkdir -p "$dest/bin" "$dest/lib"
cp "$build/tests/engine_tests" "$build/tests/cuda_engine_tests" "$build/bench/engine_bench" "$dest/bin/"
cp "$repo/scripts/device-run.sh" "$dest/"

# Every resolved library except the ones any Linux has (glibc, libstdc++, libgcc).
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libstdc\+\+|libgcc_s|libpthread|libdl\.so|librt\.so)'
for bin in "$dest"/bin/*; do
  ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
    if ! [[ $name =~ $skip ]]; then cp -L "$path" "$dest/lib/$name"; fi
  done
done
du -sh "$dest"
echo "bundle ready: $dest (run: bash $(basename "$dest")/device-run.sh on the device)"
