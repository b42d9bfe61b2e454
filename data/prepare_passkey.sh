#!/usr/bin/env bash
# Passkey-retrieval documents (Mohtashami and Jaggi 2023) for experiments/lm_passkey_char.yaml,
# written by `ropelab passkey make`: data/corpora/passkey/{train,valid,test}.txt, one
# document per line, each a 120-character prompt with its answer (" NNNNN."), so that a
# line and its newline are exactly 128 bytes: with the byte tokenizer every training chunk
# of data.context = 128 is one whole document. The splits use random seeds 101, 102 and
# 103; `ropelab passkey eval` draws its documents from seed 1, so no evaluated document
# was seen in training.
# data/corpora/passkey_512/ holds documents of varied length for a 512-byte training context
# (experiments/lm_passkey_char_512.yaml): prompts of 96 (the shortest the key sentence and
# the question allow) to 504 characters, uniformly, so with the answer a line is at most
# 512 bytes; training chunks of 512 bytes then hold one or more documents and parts of
# others, and the key is asked for at every length up to the training context (random
# seeds 201, 202, 203).
#   bash data/prepare_passkey.sh [build/ropelab]
# Idempotent: does nothing for a directory whose three files exist.
set -euo pipefail
cd "$(dirname "$0")/.."
ropelab=${1:-build/ropelab}
make_corpus() {  # directory, then the `passkey make` length flags
  local out=$1
  shift
  if [ -s "$out/train.txt" ] && [ -s "$out/valid.txt" ] && [ -s "$out/test.txt" ]; then
    echo "prepare_passkey: $out already built"
    return
  fi
  [ -x "$ropelab" ] || { echo "prepare_passkey: $ropelab not found: build ropelab first (make)" >&2; exit 1; }
  mkdir -p "$out"
  local split name count seed
  for split in train:40000:1 valid:512:2 test:512:3; do
    IFS=: read -r name count seed <<< "$split"
    "$ropelab" passkey make --count "$count" "$@" --seed "$((base_seed + seed))" > "$out/$name.txt.tmp"
    mv "$out/$name.txt.tmp" "$out/$name.txt"
  done
  wc -lc "$out"/*.txt
}
base_seed=100 make_corpus data/corpora/passkey --length 120
base_seed=200 make_corpus data/corpora/passkey_512 --length 504 --min-length 96
