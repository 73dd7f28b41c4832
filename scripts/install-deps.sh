#!/usr/bin/env bash
# Installs what gphkv needs from Debian's packages: every list in scripts/deps/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
packages=$(grep -hv '^\s*#' "$here"/deps/*.txt | tr -s ' \n' ' ')
missing=$(dpkg-query -W -f='${Package} ${Status}\n' $packages 2>/dev/null | awk '$4 != "installed" {print $1}' || true)
# dpkg-query prints nothing for a package it has never heard of: count those too.
for p in $packages; do dpkg-query -W "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -z "$(echo $missing)" ]; then
  echo "install-deps: all $(echo $packages | wc -w) packages present"
  exit 0
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends $missing
