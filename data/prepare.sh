#!/usr/bin/env bash
# Installs the SWORD modules and builds the English-Spanish Bible corpus (idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
for p in sword-text-web sword-text-sparv libsword-utils; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
done
if [ "${#need[@]}" -gt 0 ]; then
  sudo_cmd=(); [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
python3 data/prepare_bible.py "$@"
