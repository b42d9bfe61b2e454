#!/usr/bin/env bash
# Two builds of ropelab on the same sliding-window evaluation, alternating, N rounds:
# `ropelab eval --run RUN --context C --stride S` over the first TOKENS test tokens
# (data.eval_tokens), one thread. Prints the CPU, each round's wall seconds per build
# and the perplexity each build reports.
#   bash bench/compare_sliding_eval.sh OLD_ROPELAB NEW_ROPELAB RUN [ROUNDS [C [S [TOKENS]]]]
#   bash bench/compare_sliding_eval.sh /tmp/old/ropelab build/ropelab runs/lm_char 3 32768 4096 45056
set -euo pipefail
old=$1 new=$2 run=$3 rounds=${4:-3} context=${5:-32768} stride=${6:-4096} tokens=${7:-45056}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
lscpu | sed -n 's/^Model name: *//p'
echo "eval --run $run --context $context --stride $stride --set data.eval_tokens=$tokens --threads 1"
timed() {  # BUILD NAME -> wall seconds; the perplexity in $work/NAME
  local start end
  start=$(date +%s.%N)
  "$1" eval --run "$run" --context "$context" --stride "$stride" --set "data.eval_tokens=$tokens" --threads 1 2>&1 |
    grep -o 'perplexity = [0-9.]*' | head -1 >"$work/$2"
  end=$(date +%s.%N)
  echo "$end - $start" | bc -l
}
for r in $(seq "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then
    a=$(timed "$old" old)
    b=$(timed "$new" new)
  else
    b=$(timed "$new" new)
    a=$(timed "$old" old)
  fi
  printf 'round %d: old %.1f s (%s) | new %.1f s (%s), old/new %.3f\n' "$r" "$a" "$(cat "$work/old")" "$b" \
    "$(cat "$work/new")" "$(echo "$a / $b" | bc -l)"
done
