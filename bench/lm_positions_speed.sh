#!/usr/bin/env bash
# Training throughput of the ablation LM (experiments/lm_sotu_char_small.yaml) for each
# position encoding (rotary also under YaRN scaling; no encoding with the Forgetting
# Transformer's forget gate, `fox`, and with CoPE, `cope`) and for the Performer, on fixed-shape
# batches (32 x 128 bytes), one thread pinned to one core (`taskset -c 0`: unpinned, the
# BLAS threads spread over a second core part of the time and the figures split into two
# clusters ~35% apart). Variants are interleaved over REPEATS rounds so drifting machine load
# affects them alike; prints the CPU, every round, the median and its ratio to rotary's.
# LENGTH and BATCH set the batches' shape and the training context (data.context, which
# the learned table and the other length settings follow): 512 and 16 are the length
# study at 512's updates (experiments/lm_sotu_char_512.yaml). `randomized rotary` and
# `pose rotary` train rotary on drawn positions (model.position.train_positions, range 64x
# the context); `ssmax rotary` and `ssmax none` add Scalable-Softmax (model.position.ssmax).
# `layers4 rotary` is rotary at four layers and `rnope rotary` RNoPE-SWA at four (every
# fourth layer NoPE, the others with a window of LENGTH / 2: model.attention.layer_windows):
# compare the two with each other.
# VARIANTS="rotary,pose rotary" runs those alone (comma-separated).
#   bash bench/lm_positions_speed.sh [REPEATS] [BUILD] [LENGTH] [BATCH]
set -euo pipefail
repeats=${1:-3}
build=${2:-build}
length=${3:-128}
batch=${4:-32}
config=experiments/lm_sotu_char_small.yaml
performer="model.attention={type: performer, num_features: 128, chunk_size: 32}"
yarn="model.position.scaling={type: yarn, factor: 8}"
variants=("learned" "sinusoidal" "t5_bias" "rotary" "none" "alibi" "xpos" "kerple" "kerple_power" "fire"
          "yarn rotary" "fox none" "cope none" "performer learned" "performer rotary" "randomized rotary"
          "pose rotary" "ssmax rotary" "ssmax none" "layers4 rotary" "rnope rotary")
[[ -n ${VARIANTS:-} ]] && IFS=, read -r -a variants <<<"$VARIANTS"
lscpu | sed -n 's/^Model name: */CPU: /p'
echo "batches of $batch x $length tokens, data.context=$length"
declare -A runs
for ((r = 1; r <= repeats; ++r)); do
  for v in "${variants[@]}"; do
    args=(--set "model.position.type=${v##* }" --set "data.context=$length")
    [[ $v == performer* ]] && args+=(--set "$performer")
    [[ $v == yarn* ]] && args+=(--set "$yarn")
    [[ $v == fox* ]] && args+=(--set model.position.forget_gate=true)
    [[ $v == cope* ]] && args+=(--set model.position.cope=true)
    [[ $v == ssmax* ]] && args+=(--set model.position.ssmax=true)
    [[ $v == randomized* || $v == pose* ]] && args+=(--set "model.position.train_positions.type=${v%% *}")
    [[ $v == layers4* || $v == rnope* ]] && args+=(--set model.decoder_layers=4)
    half=$((length / 2))
    [[ $v == rnope* ]] && args+=(--set model.position.nope_every=4 --set "model.attention.layer_windows=$half,$half,$half,0")
    tps=$(taskset -c 0 "$build/ropelab" bench train "$config" "${args[@]}" --vocab 256 --batch "$batch" --length "$length" \
          --threads 1 --steps 20 --json | sed -n 's/.*"target_tokens_per_s":\([0-9.]*\).*/\1/p')
    runs[$v]+="$tps "
  done
done
median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
rotary=$(median "${runs[rotary]}")
printf '| variant | target tokens/s per round | median | median / rotary |\n|---|---|---|---|\n'
for v in "${variants[@]}"; do
  m=$(median "${runs[$v]}")
  printf '| %s | %s | %.0f | %.3f |\n' "$v" "$(printf '%.0f ' ${runs[$v]})" "$m" "$(bc -l <<<"$m / $rotary")"
done
