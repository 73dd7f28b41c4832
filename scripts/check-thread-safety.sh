#!/usr/bin/env bash
# Clang's thread-safety analysis (-Wthread-safety) over the files whose
# shared fields carry Abseil's annotations (ABSL_GUARDED_BY and friends): a
# field read or written without its lock, or a function called without the
# lock it requires, fails the check. The project builds with g++, which
# ignores the annotations, so this compiles those files once more with clang
# (syntax only: no objects), with the flags the build recorded in
# compile_commands.json.
#
#   scripts/check-thread-safety.sh [BUILD_DIR]   (default build/)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build}
clang=${CLANG:-clang++}
# The annotated files: what threads share in the client's coalescer and
# unary order, and in the server's batcher, executor and completion pool.
files=(
  client/coalescer.cc
  client/thread_order.cc
  server/batcher.cc
  server/completion_pool.cc
  server/executor.cc
)
command -v "$clang" >/dev/null || { echo "check-thread-safety: $clang not found (Debian: clang)" >&2; exit 2; }
[ -f "$build/compile_commands.json" ] || { echo "check-thread-safety: no $build/compile_commands.json (build first)" >&2; exit 2; }
python3 - "$repo" "$build/compile_commands.json" "$clang" "${files[@]}" <<'EOF'
import json, os, re, shlex, subprocess, sys

repo, db, clang, files = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
db_entries = json.load(open(db))
entries = {e["file"]: e for e in db_entries}
# In a unity build (GPHKV_UNITY_BUILD) the database names the batches
# (Unity/unity_N_cxx.cxx), each including its sources: a source takes its
# batch's flags.
for e in db_entries:
    if "/Unity/unity_" in e["file"] and os.path.exists(e["file"]):
        for m in re.finditer(r'#include "([^"]+)"', open(e["file"]).read()):
            entries.setdefault(m.group(1), e)
failed = 0
for f in files:
    path = f"{repo}/{f}"
    e = entries.get(path)
    if e is None:
        print(f"check-thread-safety: {f} is not in {db}", file=sys.stderr)
        failed += 1
        continue
    args = [path if a == e["file"] else a for a in shlex.split(e["command"])[1:]]
    out = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a == "-o":  # no object: syntax only
            skip = True
            continue
        out.append(a)
    cmd = [clang, "-fsyntax-only", "-Wthread-safety", "-Wthread-safety-beta", "-Werror=thread-safety",
           "-Wno-unknown-warning-option", "-Wno-unused-command-line-argument"] + out
    r = subprocess.run(cmd, cwd=e["directory"], capture_output=True, text=True)
    # Only the analysis' findings fail the check; clang's other opinions on
    # code g++ builds are printed, not counted.
    findings = [l for l in r.stderr.splitlines() if "[-Wthread-safety" in l or "-Werror,-Wthread-safety" in l]
    if r.returncode != 0 or findings:
        print(r.stderr, file=sys.stderr)
        failed += 1
        print(f"check-thread-safety: {f}: FAILED")
    else:
        print(f"check-thread-safety: {f}: ok")
sys.exit(1 if failed else 0)
EOF
