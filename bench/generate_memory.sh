#!/usr/bin/env bash
# `ropelab generate --max-new 100000000000 --min-new 100000000000` (no end of text) of an ALiBi byte LM (experiments/lm_sotu_char_small.yaml,
# model.position.type=alibi, trained STEPS updates), sampling without end, with and without a
# sliding window: every INTERVAL seconds for SECONDS, the bytes written so far and the resident
# memory (VmRSS); then Ctrl-C (SIGINT) and the exit status. With a window the decoding caches
# keep sinks + window keys per layer, so the memory stays flat; without, it grows with the text.
#   bash bench/generate_memory.sh [SECONDS] [STEPS] [BUILD] [WINDOW]
#   bash bench/generate_memory.sh 120 50 build 256
set -euo pipefail
seconds=${1:-120}
steps=${2:-50}
build=${3:-build}
window=${4:-256}
interval=10
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source bench/alibi_lm.sh
train_alibi_lm "$build" "$steps" "$work"
for setting in "window=$window sinks=4" "no window"; do
  sets=()
  [[ $setting == window* ]] && sets=(--set "model.attention.window=$window" --set model.attention.sinks=4)
  echo
  echo "generate, $setting:"
  printf '| seconds | bytes written | VmRSS MiB |\n|---|---|---|\n'
  set -m  # job control: the background job takes SIGINT
  "$build/ropelab" generate --run "$work/alibi" --checkpoint last --prompt 'The Congress' --sample --seed 1 \
    --max-new 100000000000 --min-new 100000000000 --threads 2 "${sets[@]}" > "$work/out.txt" 2> "$work/err.txt" &
  pid=$!
  set +m
  for ((t = interval; t <= seconds; t += interval)); do
    sleep "$interval"
    rss=$(awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$pid/status")
    printf '| %d | %d | %d |\n' "$t" "$(stat -c %s "$work/out.txt")" "$rss"
  done
  kill -INT "$pid"
  status=0
  wait "$pid" || status=$?
  echo "after SIGINT: exit status $status; stderr: $(cat "$work/err.txt")"
  echo "last bytes written: $(tail -c 80 "$work/out.txt" | tr '\n' ' ')"
done
