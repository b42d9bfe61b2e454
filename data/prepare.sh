#!/usr/bin/env bash
# Installs the SWORD modules and builds the English-Spanish Bible corpus (idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/apt_install.sh sword-text-web sword-text-sparv libsword-utils
python3 data/prepare_bible.py "$@"
