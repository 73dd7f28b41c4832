#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan, CPU backend) in
# build-fuzz/ and fuzzes the request path briefly (CI: scripts/test.sh), or as
# long as the arguments say:
#   scripts/fuzz.sh                         # 200000 inputs, one process (CI)
#   scripts/fuzz.sh -runs=625000 -jobs=16 -workers=16   # 16 processes of 625000: 10^7
#   scripts/fuzz.sh --build-only            # builds and writes the seeds, no run
#                                           # (scripts/device-bundle-fuzz.sh)
# Arguments go to libFuzzer after the defaults (-runs is per process). A
# finding (crash, hang, sanitizer report, a refused request that changed the
# store) fails the run and leaves its input in build-fuzz/findings/.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build-fuzz
build_only=0
if [ "${1:-}" = --build-only ]; then build_only=1; shift; fi
if ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz: clang++ not found (scripts/install-deps.sh installs clang and libclang-rt-14-dev)" >&2
  exit 1
fi
if [ ! -f "$(clang++ -print-file-name=libclang_rt.fuzzer-x86_64.a)" ] &&
   [ ! -f "$(clang++ -print-runtime-dir 2>/dev/null)/libclang_rt.fuzzer-x86_64.a" ]; then
  echo "fuzz: clang++ has no libFuzzer runtime (scripts/install-deps.sh installs libclang-rt-14-dev)" >&2
  exit 1
fi
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DGPHKV_CUDA=OFF -DGPHKV_BUILD_TESTS=OFF -DGPHKV_BUILD_BENCH=OFF -DGPHKV_FUZZ=ON >/dev/null
cmake --build "$dir" -j "$(nproc)" --target request_fuzzer request_fuzz_seeds
rm -rf "$dir/seeds" "$dir/findings"
mkdir -p "$dir/seeds" "$dir/corpus" "$dir/findings"
"$dir/tests/fuzz/request_fuzz_seeds" "$dir/seeds"
[ "$build_only" = 0 ] || exit 0
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# -timeout: an input running 10 s is a hang; records hold up to 64 KiB.
# New inputs go to corpus/ (kept between runs), the seeds are read only.
cd "$dir"
./tests/fuzz/request_fuzzer -runs=200000 -max_len=65536 -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
  -artifact_prefix=findings/ "$@" corpus seeds
