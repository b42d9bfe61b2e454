#!/usr/bin/env bash
# Peak memory of evaluating the ablation LM (experiments/lm_sotu_char_small.yaml) at a long
# context, for each position encoding. Each variant is trained for 2 updates (the weights do
# not matter for memory), then `ropelab eval --context CONTEXT` runs REPEATS times under
# /usr/bin/time -v over the first CONTEXT*2 test bytes, one window per batch; the table has
# each run's peak resident memory (glibc keeps freed blocks, so whether a freed T x T block
# is reused or a fresh one touched varies between runs). For scale the script prints the
# size of one (1, H, T, T) float tensor: the attention probabilities of one layer, and what
# a materialised logit bias adds. Memory only: timings are not read.
#   bash bench/length_memory.sh [CONTEXT] [REPEATS] [BUILD]
set -euo pipefail
context=${1:-4096}
repeats=${2:-3}
build=${3:-build}
config=experiments/lm_sotu_char_small.yaml
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
lscpu | sed -n 's/^Model name: */CPU: /p'
variants=(none rotary "yarn rotary" alibi t5_bias kerple fire xpos)
heads=4
printf 'one (1, %d, %d, %d) float tensor: %.0f MiB\n' "$heads" "$context" "$context" \
  "$(bc -l <<<"$heads * $context * $context * 4 / 1048576")"
printf '| variant | peak RSS per run (MiB) | min |\n|---|---|---|\n'
for v in "${variants[@]}"; do
  run="$work/${v// /_}"
  args=(--set "model.position.type=${v##* }" --set train.steps=2 --set train.valid_every=0)
  [[ $v == yarn* ]] && args+=(--set "model.position.scaling={type: yarn, factor: 32}")
  "$build/ropelab" train "$config" -o "$run" "${args[@]}" --threads 1 > "$work/train.log" 2>&1 ||
    { cat "$work/train.log" >&2; exit 1; }
  rss=()
  for ((r = 1; r <= repeats; ++r)); do
    /usr/bin/time -v "$build/ropelab" eval --run "$run" --checkpoint last --context "$context" --threads 1 \
      --set "data.eval_tokens=$((context * 2))" > "$work/eval.log" 2> "$work/time.log" ||
      { cat "$work/eval.log" "$work/time.log" >&2; exit 1; }
    grep -q "$((context * 2)) tokens in 2 chunks of $context" "$work/eval.log" ||
      { echo "unexpected evaluation:" >&2; cat "$work/eval.log" >&2; exit 1; }
    rss+=("$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time.log")")
  done
  mib=$(printf '%s\n' "${rss[@]}" | awk '{printf "%.0f ", $1 / 1024}')
  printf '| %s | %s| %s |\n' "$v" "$mib" "$(tr ' ' '\n' <<<"$mib" | sed '/^$/d' | sort -g | head -1)"
done
