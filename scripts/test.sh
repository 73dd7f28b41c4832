#!/usr/bin/env bash
# The README's test command: install what the main test suite needs
# (scripts/deps/build.txt, test.txt, loadgen.txt, service.txt), build what
# ctest runs into build/ (the target gphkv_tests: every test binary and the
# programs the tests start; not the benchmarks, which `scripts/build.sh` with
# no target builds), run every test (ctest). The deploy tests that need
# container or Prometheus-kit tools (scripts/deps/deploy.txt) skip without
# them, saying so; CI (.ci/run) installs those and then also runs the
# sanitizers and the fuzzing (docs/hardening.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh build test loadgen service
bash scripts/build.sh gphkv_tests
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 900
