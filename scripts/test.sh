#!/usr/bin/env bash
# The README's test command: install, build, run every test; then the same
# engine, server and client tests under ASan+UBSan and under TSan, and a
# short fuzzing run of the request path (docs/hardening.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 900
bash scripts/sanitize.sh asan
bash scripts/sanitize.sh tsan
bash scripts/fuzz.sh
