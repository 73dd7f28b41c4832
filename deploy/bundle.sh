#!/usr/bin/env bash
# Collects gphkv's binaries and the shared libraries they load into one folder,
# the payload of the container image's runtime stage:
#
#   OUT/bin/gphkv-server, gphkv, gphkv-loadgen   (RPATH $ORIGIN/../lib)
#   OUT/bin/gphkv-entrypoint, gphkv-healthcheck
#   OUT/lib/*.so.*                               every library ldd resolves,
#                                                but glibc's and the GPU driver's
#
# glibc stays the base image's (it must be at least as new as the build host's)
# and libcuda/libnvidia-* come from the host's driver at run time (the NVIDIA
# container toolkit mounts them), so neither may be bundled.
#
# Usage: deploy/bundle.sh BUILD_DIR OUT_DIR   (GPHKV_BUNDLE_STRIP=0 keeps debug info)
set -euo pipefail
build=${1:?usage: bundle.sh BUILD_DIR OUT_DIR}
out=${2:?usage: bundle.sh BUILD_DIR OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
command -v patchelf >/dev/null || { echo "bundle.sh: patchelf is needed (apt-get install patchelf)" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"

# Libraries that must come from the base image or the host, never the bundle.
is_system_lib() {
  case "$1" in
    linux-vdso.so*|ld-linux*|libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libresolv.so*|\
    libutil.so*|libanl.so*|libnsl.so*|libmvec.so*|libcuda.so*|libnvidia-*|libnvcuvid.so*) return 0 ;;
    *) return 1 ;;
  esac
}

found=0
for name in gphkv-server gphkv gphkv-loadgen; do
  # The binaries' folders (server/, client/, loadgen/) are the build's business:
  # find them by name rather than by path.
  bin=$(find "$build" -type f -name "$name" -perm -u+x -not -path '*/CMakeFiles/*' | head -n 1)
  if [ -z "$bin" ]; then
    if [ "$name" = gphkv-loadgen ]; then
      echo "bundle.sh: note: $name is not built; the image will lack it" >&2
      continue
    fi
    echo "bundle.sh: $name not found under $build (build it first)" >&2
    exit 1
  fi
  cp "$bin" "$out/bin/$name"
  # Debug info stays in the build tree; the image gets the lean binary.
  if [ "${GPHKV_BUNDLE_STRIP:-1}" = 1 ] && command -v strip >/dev/null; then
    strip --strip-debug "$out/bin/$name"
  fi
  found=$((found + 1))
  # "libfoo.so.1 => /usr/lib/x86_64-linux-gnu/libfoo.so.1 (0x...)"
  while read -r soname arrow path _; do
    [ "$arrow" = "=>" ] || continue
    is_system_lib "$soname" && continue
    if [ "$path" = "not" ]; then
      echo "bundle.sh: $name needs $soname, which ldd cannot find" >&2
      exit 1
    fi
    [ -e "$out/lib/$soname" ] || cp -L "$path" "$out/lib/$soname"
  done < <(ldd "$bin")
  # DT_RPATH (not RUNPATH) so that it also applies to the libraries' own
  # dependencies: the whole closure resolves inside the bundle.
  patchelf --force-rpath --set-rpath '$ORIGIN/../lib' "$out/bin/$name"
done

install -m 0755 "$here/entrypoint.sh" "$out/bin/gphkv-entrypoint"
install -m 0755 "$here/healthcheck.sh" "$out/bin/gphkv-healthcheck"
for lib in "$out"/lib/*; do
  [ -e "$lib" ] || continue
  chmod 0644 "$lib"
  # A library with a RUNPATH of its own ignores the executable's RPATH for its
  # dependencies: point it at the bundle too.
  if [ -n "$(patchelf --print-rpath "$lib" 2>/dev/null)" ]; then
    patchelf --set-rpath '$ORIGIN' "$lib"
  fi
done
echo "bundle.sh: $found binaries, $(ls "$out/lib" | wc -l) libraries, $(du -sh "$out" | cut -f1) in $out"
