#!/usr/bin/env bash
# Two builds of ropelab on the same training step (`ropelab bench train`), alternating,
# N rounds:
#   bash bench/compare_builds.sh OLD_ROPELAB NEW_ROPELAB [ROUNDS [STEPS]]
#   bash bench/compare_builds.sh OLD_ROPELAB NEW_ROPELAB ROUNDS STEPS -- BENCH_TRAIN_ARGS...
# for checking that a change of code leaves training speed where it was, or measuring what
# it gains. Without BENCH_TRAIN_ARGS the step is the default model (d_model 256, 3+3
# layers, 4 heads, d_ff 1024, synthetic 64 x 32-token batches) on 2 threads; with them,
# those arguments alone (a config, --set, --batch, --length, --threads ...), e.g. CoPE's
# 512-byte language model on one thread:
#   bash bench/compare_builds.sh OLD NEW 4 4 -- experiments/lm_sotu_char_small.yaml \
#     experiments/lm_sotu_char_512.yaml --set 'model.position={type: none, cope: true}' \
#     --vocab 260 --batch 16 --length 512 --threads 1
set -euo pipefail
old=$1 new=$2 rounds=${3:-3} steps=${4:-12}
shift $(($# < 4 ? $# : 4))
args=(--threads 2)
if [ "${1:-}" = "--" ]; then
  shift
  args=("$@")
fi
tps() { sed 's/.*target_tokens_per_s": *\([0-9.]*\).*/\1/'; }
run() { "$1" bench train "${args[@]}" --steps "$steps" --gemm-repeats 0 --json | tps; }
lscpu | sed -n 's/^Model name: *//p'
echo "bench train ${args[*]} --steps $steps"
for r in $(seq "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then
    a=$(run "$old")
    b=$(run "$new")
  else
    b=$(run "$new")
    a=$(run "$old")
  fi
  printf 'round %d: old %.0f tok/s | new %.0f tok/s (new/old %.3f)\n' "$r" "$a" "$b" "$(echo "$b / $a" | bc -l)"
done
