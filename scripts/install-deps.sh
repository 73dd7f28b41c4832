#!/usr/bin/env bash
# Installs Debian's packages for a job: the lists of scripts/deps/ named on the
# command line, or every list when none is named.
#
#   scripts/install-deps.sh build demo                     # scripts/run-demo.sh
#   scripts/install-deps.sh build test loadgen service     # scripts/test.sh
#   scripts/install-deps.sh                                # everything: CI (.ci/run)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
lists=()
if [ $# -eq 0 ]; then
  lists=("$here"/deps/*.txt)
else
  for name in "$@"; do
    [ -f "$here/deps/$name.txt" ] || { echo "install-deps: no list scripts/deps/$name.txt" >&2; exit 2; }
    lists+=("$here/deps/$name.txt")
  done
fi
packages=$(grep -hv '^\s*#' "${lists[@]}" | tr -s ' \n' '\n' | sort -u | tr '\n' ' ')
missing=$(dpkg-query -W -f='${Package} ${Status}\n' $packages 2>/dev/null | awk '$4 != "installed" {print $1}' || true)
# dpkg-query prints nothing for a package it has never heard of: count those too.
for p in $packages; do dpkg-query -W "$p" >/dev/null 2>&1 || missing="$missing $p"; done
what=$(basename -s .txt "${lists[@]}" | tr '\n' ' ')
if [ -z "$(echo $missing)" ]; then
  echo "install-deps: all $(echo $packages | wc -w) packages of ${what% } present"
  exit 0
fi
echo "install-deps (${what% }): installing$missing"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# dpkg's progress lines go to stdout, dropped; errors go to stderr.
$sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
