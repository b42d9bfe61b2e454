#!/usr/bin/env bash
# make demo-tiny: a tiny Transformer memorises 32 hand-written pairs (~25 s), then translates.
set -euo pipefail
cd "$(dirname "$0")/.."
run=runs/demo_tiny
build/ropelab train experiments/demo_tiny.yaml -o "$run"
echo
echo "== translations (build/ropelab translate --run $run < data/demo/test.en)"
paste -d '\n' data/demo/test.en <(build/ropelab translate --run "$run" < data/demo/test.en) /dev/null |
  awk 'NR % 3 == 1 { printf "  en: %s\n", $0 } NR % 3 == 2 { printf "  es: %s\n", $0 } NR % 3 == 0 { print "" }'
