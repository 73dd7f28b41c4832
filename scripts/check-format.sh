#!/usr/bin/env bash
# Fails, naming each file and line, where a tracked C++ or CUDA file differs
# from what clang-format writes with the repository's .clang-format (Debian 12's
# clang-format 14, from scripts/deps/build.txt). To fix: scripts/check-format.sh --fix
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check-format: clang-format is not installed (bash scripts/install-deps.sh)" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu' '*.cuh')
if [ "${1:-}" = --fix ]; then
  clang-format -i "${files[@]}"
else
  clang-format --dry-run --Werror "${files[@]}"
fi
