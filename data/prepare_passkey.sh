#!/usr/bin/env bash
# Passkey-retrieval documents (Mohtashami and Jaggi 2023) for experiments/lm_passkey_char.yaml,
# written by `ropelab passkey make`: data/corpora/passkey/{train,valid,test}.txt, one
# document per line, each a 120-character prompt with its answer (" NNNNN."), so that a
# line and its newline are exactly 128 bytes: with the byte tokenizer every training chunk
# of data.context = 128 is one whole document. The splits use random seeds 101, 102 and
# 103; `ropelab passkey eval` draws its documents from seed 1, so no evaluated document
# was seen in training.
#   bash data/prepare_passkey.sh [build/ropelab]
# Idempotent: does nothing when the three files exist.
set -euo pipefail
cd "$(dirname "$0")/.."
ropelab=${1:-build/ropelab}
out=data/corpora/passkey
if [ -s "$out/train.txt" ] && [ -s "$out/valid.txt" ] && [ -s "$out/test.txt" ]; then
  echo "prepare_passkey: $out already built"
  exit 0
fi
[ -x "$ropelab" ] || { echo "prepare_passkey: $ropelab not found: build ropelab first (make)" >&2; exit 1; }
mkdir -p "$out"
make_split() {  # split count seed
  "$ropelab" passkey make --count "$2" --length 120 --seed "$3" > "$out/$1.txt.tmp"
  mv "$out/$1.txt.tmp" "$out/$1.txt"
}
make_split train 40000 101
make_split valid 512 102
make_split test 512 103
wc -lc "$out"/*.txt
