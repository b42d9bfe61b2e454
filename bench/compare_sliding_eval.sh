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
source bench/alternate.sh
perplexity() {  # BUILD NAME: the build's evaluation, its perplexity line kept in $work/NAME
  "$1" eval --run "$run" --context "$context" --stride "$stride" --set "data.eval_tokens=$tokens" --threads 1 2>&1 |
    grep -o 'perplexity = [0-9.]*' | head -1 >"$work/$2"
}
timed() { wall_seconds perplexity "$1" "$2"; }
report() {
  printf 'round %d: old %.1f s (%s) | new %.1f s (%s), old/new %.3f\n' "$1" "$2" "$(cat "$work/old")" "$3" \
    "$(cat "$work/new")" "$(echo "$2 / $3" | bc -l)"
}
alternate "$rounds" "$old" "$new"
