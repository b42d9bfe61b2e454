#!/usr/bin/env bash
# Two builds of ropelab on the same long-prompt greedy decoding, alternating, N rounds:
# `ropelab generate` of DOCS passkey prompts of LENGTH characters (`ropelab passkey make
# --prompts`, the prompts `ropelab passkey eval` asks) with 7 new tokens each (a 5-digit
# key and a little more, as passkey eval decodes), one thread. Prints the CPU, each
# round's wall seconds per build and whether the two builds wrote the same text.
#   bash bench/compare_passkey.sh OLD_ROPELAB NEW_ROPELAB RUN [ROUNDS [LENGTH [DOCS]]]
#   bash bench/compare_passkey.sh /tmp/old/ropelab build/ropelab runs/lm_char 4 32760 2
set -euo pipefail
old=$1 new=$2 run=$3 rounds=${4:-4} length=${5:-32760} docs=${6:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$new" passkey make --prompts --count "$docs" --length "$length" --seed 7 >"$work/prompts.tsv"
cut -f1 "$work/prompts.tsv" >"$work/prompts.txt"
lscpu | sed -n 's/^Model name: *//p'
echo "generate --run $run --max-new 7 --threads 1: $docs prompts of $length characters"
source bench/alternate.sh
decode() { "$1" generate --run "$run" --max-new 7 --threads 1 <"$work/prompts.txt" >"$work/$2.txt"; }  # BUILD NAME
timed() { wall_seconds decode "$1" "$2"; }
report() {
  local same
  same=$(cmp -s "$work/old.txt" "$work/new.txt" && echo "same text" || echo "TEXT DIFFERS")
  printf 'round %d: old %.2f s | new %.2f s (old/new %.3f), %s\n' "$1" "$2" "$3" "$(echo "$2 / $3" | bc -l)" "$same"
}
alternate "$rounds" "$old" "$new"
