#!/usr/bin/env bash
# bf16 against fp32 training (train.precision) on two models, one seed each:
#  * the toy translator (experiments/toy_en_es.yaml): both precisions trained, each scored
#    on the Bible test split (BLEU, chrF) in its own precision;
#  * the ablation language model with rotary positions (experiments/lm_sotu_char_small.yaml,
#    seed 1): both trained, each evaluated on the test split in fp32 and in bf16.
#   bash scripts/precision_quality.sh [OUT=runs/precision]
# Environment: ROPELAB (default build/ropelab). Runs are never overwritten: an existing run
# directory is continued (train's own rule) or, if finished, evaluated again. Prints the
# validation losses side by side and the scores; the corpora come from data/prepare.sh and
# data/prepare_sotu.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/precision}
ropelab=${ROPELAB:-build/ropelab}
mkdir -p "$out"
[ -f data/corpora/bible/train.en ] || bash data/prepare.sh
[ -f data/corpora/sotu/train.txt ] || bash data/prepare_sotu.sh
for p in fp32 bf16; do
  "$ropelab" train experiments/toy_en_es.yaml --set train.precision=$p -o "$out/toy_$p" >"$out/toy_$p.train.log" 2>&1
  "$ropelab" eval --run "$out/toy_$p" --split test --precision $p >"$out/toy_$p.eval.log" 2>&1
  "$ropelab" train experiments/lm_sotu_char_small.yaml --set train.seed=1 --set train.precision=$p \
    -o "$out/lm_rotary_$p" >"$out/lm_rotary_$p.train.log" 2>&1
  for e in fp32 bf16; do
    "$ropelab" eval --run "$out/lm_rotary_$p" --split test --precision $e >"$out/lm_rotary_$p.eval_$e.log" 2>&1
  done
done
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores; $ropelab ($(git rev-parse --short HEAD))"
for m in toy lm_rotary; do
  echo "== $m: validation loss, fp32 | bf16"
  paste -d'|' <(grep '^valid step' "$out/${m}_fp32.train.log" | cut -d'|' -f1-2) \
    <(grep '^valid step' "$out/${m}_bf16.train.log" | cut -d'|' -f2)
  grep -h '^done' "$out/${m}_fp32.train.log" "$out/${m}_bf16.train.log" || true
done
for p in fp32 bf16; do echo "toy $p: $(grep -E '^(BLEU|chrF2 )' "$out/toy_$p.eval.log" | tr '\n' ' ')"; done
for p in fp32 bf16; do
  for e in fp32 bf16; do echo "lm_rotary trained $p, evaluated $e: $(grep perplexity "$out/lm_rotary_$p.eval_$e.log")"; done
done
