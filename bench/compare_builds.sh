#!/usr/bin/env bash
# Two builds of ropelab on the same training step (`ropelab bench train`: d_model 256,
# 3+3 layers, 4 heads, d_ff 1024, synthetic 64 x 32-token batches), alternating, N rounds:
#   bash bench/compare_builds.sh OLD_ROPELAB NEW_ROPELAB [ROUNDS] [STEPS]
# for checking that a change of code leaves training speed where it was.
set -euo pipefail
old=$1 new=$2 rounds=${3:-3} steps=${4:-12}
tps() { sed 's/.*target_tokens_per_s": *\([0-9.]*\).*/\1/'; }
lscpu | sed -n 's/^Model name: *//p'
for r in $(seq "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then
    a=$("$old" bench train --threads 2 --steps "$steps" --json | tps)
    b=$("$new" bench train --threads 2 --steps "$steps" --json | tps)
  else
    b=$("$new" bench train --threads 2 --steps "$steps" --json | tps)
    a=$("$old" bench train --threads 2 --steps "$steps" --json | tps)
  fi
  printf 'round %d: old %.0f tok/s | new %.0f tok/s (new/old %.3f)\n' "$r" "$a" "$b" "$(echo "$b / $a" | bc -l)"
done
