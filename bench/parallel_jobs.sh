#!/usr/bin/env bash
# Two training processes at once with one thread each, as `ropelab ablate --jobs 2
# --threads 1` runs them on a 2-core machine: the summed training throughput of two
# `ropelab bench train` processes of the length study's LM (lm_sotu_char_small.yaml at
# context 512, 16 x 512-byte batches: lm_sotu_char_512.yaml's updates), started together.
# Three ways, interleaved over ROUNDS rounds with the order rotated each round:
#   before         OLD (a ropelab whose --threads bounds LibTorch's threads only), as it runs
#   before+env     OLD with OPENBLAS_NUM_THREADS=1 (OpenBLAS's pool bounded from outside)
#   after          NEW (a ropelab whose --threads bounds OpenBLAS's pool too)
# Prints the CPU, each process's target tokens/s per round, and the medians of the sums.
#   bash bench/parallel_jobs.sh OLD NEW [ROUNDS] [STEPS]
set -euo pipefail
cd "$(dirname "$0")/.."
old=${1:?usage: bench/parallel_jobs.sh OLD NEW [ROUNDS] [STEPS]}
new=${2:?usage: bench/parallel_jobs.sh OLD NEW [ROUNDS] [STEPS]}
rounds=${3:-3}
steps=${4:-30}
for bin in "$old" "$new"; do [ -x "$bin" ] || { echo "parallel_jobs: $bin is not an executable" >&2; exit 1; }; done
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores"
echo "old: $old; new: $new; $rounds rounds, $steps timed updates per process after 3 untimed"
args=(bench train experiments/lm_sotu_char_small.yaml --set data.context=512 --vocab 256 --batch 16 --length 512
  --threads 1 --steps "$steps" --warmup 3 --gemm-repeats 0 --json)
one() { # way -> one process's target tokens/s
  case $1 in
    before) "$old" "${args[@]}" ;;
    before+env) OPENBLAS_NUM_THREADS=1 "$old" "${args[@]}" ;;
    after) "$new" "${args[@]}" ;;
  esac | sed -n 's/.*"target_tokens_per_s":\([0-9.]*\).*/\1/p'
}
ways=(before before+env after)
declare -A sums
for ((r = 0; r < rounds; ++r)); do
  for ((i = 0; i < ${#ways[@]}; ++i)); do
    way=${ways[$(((i + r) % ${#ways[@]}))]}
    a=$(mktemp) b=$(mktemp)
    one "$way" >"$a" &
    one "$way" >"$b" &
    wait
    sum=$(awk '{s += $1} END {printf "%.0f", s}' "$a" "$b")
    echo "round $((r + 1)) $way: $(cat "$a") + $(cat "$b") = $sum target tokens/s"
    sums[$way]+="$sum "
    rm -f "$a" "$b"
  done
done
median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
base=$(median "${sums[before]}")
for way in "${ways[@]}"; do
  m=$(median "${sums[$way]}")
  echo "median $way: $m target tokens/s ($(awk -v m="$m" -v b="$base" 'BEGIN {printf "%.2f", m / b}')x before)"
done
