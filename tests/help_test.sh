#!/usr/bin/env bash
# --help and its kin exit 0 and print the program's own flags on stdout, on
# every program (Abseil's default exits 1); a flag that does not exist still fails.
# Usage: help_test.sh SERVER_BINARY CLI_BINARY LOADGEN_BINARY
set -uo pipefail
fail() { echo "FAIL: $*"; exit 1; }
check() {  # check BINARY FLAG_IT_MUST_LIST
  local bin=$1 flag=$2 out rc
  for arg in --help --helpshort --helpfull --help=$flag --version; do
    out=$("$bin" "$arg" 2>/dev/null); rc=$?
    [ $rc -eq 0 ] || fail "$(basename "$bin") $arg exited $rc"
    [ "$arg" = --version ] && continue
    grep -q -- "--$flag " <<<"$out" || fail "$(basename "$bin") $arg does not list --$flag on stdout: ${out:0:500}"
  done
  "$bin" --no_such_flag >/dev/null 2>&1 && fail "$(basename "$bin") --no_such_flag exited 0"
  echo "ok: $(basename "$bin")"
}
check "$1" listen_address
check "$2" server
check "$3" rate
