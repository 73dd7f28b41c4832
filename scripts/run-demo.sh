#!/usr/bin/env bash
# The README's main job: install, build, and run the engine benchmark on the CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
./build/bench/cpu_table_bench --keys="${KEYS:-10000000}" --json=build/cpu_table_bench.json
