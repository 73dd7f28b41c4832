#!/usr/bin/env bash
# Builds the CPU engine, server (durability included) and client tests with sanitizers, in a build
# folder of their own, and runs them; any report fails the run (CI runs both
# after the normal tests: scripts/test.sh).
#   scripts/sanitize.sh asan   # AddressSanitizer + UndefinedBehaviorSanitizer, in build-asan/
#   scripts/sanitize.sh tsan   # ThreadSanitizer, in build-tsan/ (the suites without gRPC)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:?usage: scripts/sanitize.sh asan|tsan}
# TSan runs the suites that do not go through gRPC: Debian's gRPC and Abseil
# are not instrumented, so TSan sees none of the ordering gRPC's threads
# establish and reports every hand-off through gRPC (docs/hardening.md).
# server_unit_tests' PipelineThreads test drives the executor, batcher,
# completion threads and metrics from many threads without gRPC.
# The memcached port's suites (memcache_tests: the parser and replies;
# memcached_tests, null_memcached_tests: the loops, acceptor, inboxes and
# completion threads over loopback) run in both, selected by their label
# "memcache" (a suite given LABELS loses the label of its own name:
# gtest_discover_tests writes the list flat). Under TSan only the cases,
# named below, that start no gRPC server: the listener over a test sink and
# over a store's pipeline (MemcachedLoopsTest: loops, acceptor, inboxes,
# answers from the completion threads), the null target and the parser; the
# cases that start gphkv-server start gRPC too, whose uninstrumented threads
# TSan reports (abseil's GraphCycles, at start).
case "$mode" in
  # gphkv-server and gphkv: the CLI test (labelled client_tests) runs them.
  asan) sanitize=address,undefined
        suites="engine_tests server_unit_tests durability_tests service_tests client_tests"
        tools="gphkv-server gphkv"; memcache_cases='' ;;
  tsan) sanitize=thread; suites="engine_tests server_unit_tests durability_tests"; tools=""
        memcache_cases='^(MemcachedLoopsTest|NullMemcachedTest|MemcacheParser|MemcacheReplies)\.' ;;
  *) echo "sanitize: unknown mode '$mode' (asan or tsan)" >&2; exit 2 ;;
esac
dir=build-$mode
# The ASan build compiles file by file (GPHKV_UNITY_BUILD=OFF) where the main
# build batches the libraries' files: CI so checks that each file compiles
# alone (includes its own headers) as well as in its batch.
unity=""
if [ "$mode" = asan ]; then unity="-DGPHKV_UNITY_BUILD=OFF"; fi
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPHKV_CUDA=OFF -DGPHKV_BUILD_BENCH=OFF \
  -DGPHKV_SANITIZE="$sanitize" $unity >/dev/null
memcache_suites="memcache_tests memcached_tests null_memcached_tests"
cmake --build "$dir" -j "$(nproc)" --target $suites $memcache_suites $tools
# A report ends the process with a failing status, so its test fails.
# LeakSanitizer runs at exit (ASan's default on Linux); its suppressions
# (scripts/lsan-suppressions.txt) name leaks of Debian's libraries only.
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export LSAN_OPTIONS=suppressions=$PWD/scripts/lsan-suppressions.txt:print_suppressions=0
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
labels=$(echo $suites | tr ' ' '|')
if [ -z "$memcache_cases" ]; then
  ctest --test-dir "$dir" --output-on-failure -j "$(nproc)" --timeout 1800 -L "^($labels|memcache)\$"
else
  ctest --test-dir "$dir" --output-on-failure -j "$(nproc)" --timeout 1800 -L "^($labels)\$"
  ctest --test-dir "$dir" --output-on-failure -j "$(nproc)" --timeout 1800 -L '^memcache$' -R "$memcache_cases"
fi
if [ "$mode" = asan ]; then
  # Our own OpenSSL calls (tls/pem_files.cc, no gRPC threads) with no
  # suppression: the libcrypto line in the file would hide what they leak.
  LSAN_OPTIONS=print_suppressions=0 "$dir/tests/client/client_tests" \
    --gtest_filter='PemFiles.*:Tls.BadFilesStopTheClientsLoadingNamingTheFlag'
fi
