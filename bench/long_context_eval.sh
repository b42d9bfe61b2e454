#!/usr/bin/env bash
# `ropelab eval --context C` of an ALiBi byte LM (experiments/lm_sotu_char_small.yaml with
# model.position.type=alibi) with the streaming and the materialized attention kernel, at
# each context of CONTEXTS: wall time, peak resident memory (/usr/bin/time -v) and
# perplexity, and the two kernels' relative perplexity difference. The LM is trained for
# STEPS updates first (its weights matter for the perplexity, not for time or memory).
# Evaluation reads the first 131072 test bytes (data.eval_tokens), 131072 / C windows of C;
# with ONE_WINDOW=1 it reads C bytes, one window, at every context.
# The materialized kernel is skipped where its (1, H, C, C) probabilities would not fit.
#   bash bench/long_context_eval.sh [CONTEXTS] [STEPS] [BUILD]
#   bash bench/long_context_eval.sh 2048,8192,32768,65536,131072 300 build
#   ONE_WINDOW=1 bash bench/long_context_eval.sh 32768,65536,131072 300 build
set -euo pipefail
contexts=${1:-2048,4096,8192,16384,32768,65536,131072}
steps=${2:-300}
build=${3:-build}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source bench/alibi_lm.sh
train_alibi_lm "$build" "$steps" "$work"
heads=4
available_mib=$(awk '/MemAvailable/ {print int($2 / 1024)}' /proc/meminfo)
printf '| context | kernel | wall s | peak RSS MiB | perplexity |\n|---|---|---|---|---|\n'
declare -A ppl
for c in ${contexts//,/ }; do
  tokens=()
  [[ ${ONE_WINDOW:-0} == 1 ]] && tokens=(--set "data.eval_tokens=$c")
  for kernel in streaming materialized; do
    need_mib=$((heads * c * c * 4 / 1048576))  # the probabilities of one layer
    if [[ $kernel == materialized ]] && ((need_mib > available_mib * 85 / 100)); then
      printf '| %d | %s | - | - | - (needs ~%d MiB) |\n' "$c" "$kernel" "$need_mib"
      continue
    fi
    /usr/bin/time -v "$build/ropelab" eval --run "$work/alibi" --checkpoint last --context "$c" --threads 2 \
      --set "model.attention.kernel=$kernel" "${tokens[@]}" > "$work/eval.log" 2> "$work/time.log" ||
      { cat "$work/eval.log" "$work/time.log" >&2; exit 1; }
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$work/time.log" |
      awk -F: '{s = 0; for (i = 1; i <= NF; ++i) s = s * 60 + $i; print s}')
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time.log")
    p=$(sed -n 's/.*perplexity = \([0-9.]*\).*/\1/p' "$work/eval.log" | head -n 1)
    ppl[$c,$kernel]=$p
    printf '| %d | %s | %.1f | %.0f | %s |\n' "$c" "$kernel" "$wall" "$(bc -l <<<"$rss / 1024")" "$p"
  done
  if [[ -n ${ppl[$c,materialized]:-} ]]; then
    printf '|   | relative difference | | | %.2e |\n' \
      "$(bc -l <<<"x = (${ppl[$c,streaming]} - ${ppl[$c,materialized]}) / ${ppl[$c,materialized]}; if (x < 0) -x else x")"
  fi
done
