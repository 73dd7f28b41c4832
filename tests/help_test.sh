#!/usr/bin/env bash
# --help and its kin exit 0 on every program we ship (Abseil's default exits 1),
# print on stdout the usage naming the program ("Usage: NAME") and the program's
# own flags; --version names it too; a flag that does not exist still fails.
# Usage: help_test.sh BINARY:FLAG_IT_MUST_LIST...
#   e.g. help_test.sh build/server/gphkv-server:listen_address build/client/gphkv:server
set -uo pipefail
fail() { echo "FAIL: $*"; exit 1; }
check() {  # check BINARY FLAG_IT_MUST_LIST
  local bin=$1 flag=$2 name out rc
  name=$(basename "$bin")
  [ -x "$bin" ] || fail "$bin is not an executable"
  for arg in --help --helpshort --helpfull --help=$flag --helpmatch=$flag --version; do
    out=$("$bin" "$arg" 2>/dev/null); rc=$?
    [ $rc -eq 0 ] || fail "$name $arg exited $rc"
    if [ "$arg" = --version ]; then
      grep -q "^$name [0-9]" <<<"$out" || fail "$name --version does not name it: ${out:0:200}"
      continue
    fi
    grep -q -- "--$flag " <<<"$out" || fail "$name $arg does not list --$flag on stdout: ${out:0:500}"
    [ "$arg" = --helpmatch=$flag ] && continue  # the flags that match, no usage
    grep -q "^Usage: $name " <<<"$out" || fail "$name $arg does not print 'Usage: $name' on stdout: ${out:0:500}"
  done
  out=$("$bin" --no_such_flag 2>&1); rc=$?
  [ $rc -ne 0 ] || fail "$name --no_such_flag exited 0"
  grep -q no_such_flag <<<"$out" || fail "$name --no_such_flag does not say which flag: ${out:0:300}"
  echo "ok: $name"
}
[ $# -gt 0 ] || fail "no program given"
for spec in "$@"; do
  check "${spec%:*}" "${spec##*:}"
done
