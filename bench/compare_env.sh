#!/usr/bin/env bash
# One runtime setting off and on, for ropelab's training step and for the same step in
# PyTorch Python (bench/pytorch_train.py, equal work), N rounds, the order of the four
# variants reversed every other round:
#   bash bench/compare_env.sh NAME=VALUE [ROUNDS=3] [STEPS=20]     (ROPELAB=PATH: another build)
# "off" is the fixed environment of bench/common.sh without NAME, "on" the same with
# NAME=VALUE; REPLACES="OTHER ..." also leaves those variables out of "on" (a setting that
# replaces another), PRECISION=bf16 times both sides in bf16 (ropelab's train.precision,
# PyTorch's autocast). Prints the CPU and the equal-work check first, then one line per variant and
# a summary per round; the raw output goes to bench/results/compare_env-TIMESTAMP.log.
set -euo pipefail
cd "$(dirname "$0")/.."
setting=${1:?usage: bash bench/compare_env.sh NAME=VALUE [ROUNDS=3] [STEPS=20]}
[[ $setting == ?*=* ]] || { echo "compare_env.sh: '$setting' is not NAME=VALUE"; exit 2; }
shift
source bench/common.sh "$@"
name=${setting%%=*}
log=$(log_for compare_env)
precision=${PRECISION:-fp32}
[[ $precision == fp32 || $precision == bf16 ]] || { echo "compare_env.sh: PRECISION must be fp32 or bf16, got '$precision'"; exit 2; }
without() { # the fixed environment without the variables named in $@
  local kv n keep
  for kv in "${env_fixed[@]}"; do
    keep=1
    for n in "$@"; do [[ $kv == "$n="* ]] && keep=0; done
    [ $keep = 1 ] && echo "$kv"
  done
}
mapfile -t env_off < <(without "$name")
mapfile -t env_on < <(without "$name" ${REPLACES:-})
env_on+=("$setting")
unset_all=()
for n in "$name" ${REPLACES:-}; do unset_all+=(-u "$n"); done
ropelab_precision=(--set train.precision="$precision")
pytorch_precision=()
[ "$precision" = bf16 ] && pytorch_precision=(--bf16)

run() { # variant -> one JSON line
  local -n e=env_${1#*_}
  case $1 in
    ropelab_*) env "${unset_all[@]}" "${e[@]}" "$ropelab" bench train --threads 2 --steps "$steps" --gemm-repeats 0 \
      "${ropelab_precision[@]}" --json ;;
    pytorch_*) env "${unset_all[@]}" "${e[@]}" /usr/bin/python3 bench/pytorch_train.py --threads 2 --steps "$steps" \
      ${pytorch_precision[@]+"${pytorch_precision[@]}"} --json ;;
  esac
}

{
  cpu_line
  echo "ropelab: $ropelab ($(git rev-parse --short HEAD)); rounds $rounds, $steps timed steps each, 2 threads, $precision"
  echo "off: ${env_off[*]}"
  echo "on:  ${env_on[*]}"
  check_equal_work
  variants=(ropelab_off ropelab_on pytorch_off pytorch_on)
  for r in $(seq "$rounds"); do
    order=("${variants[@]}")
    [ $((r % 2)) -eq 0 ] && order=(pytorch_on pytorch_off ropelab_on ropelab_off)
    declare -A tps=()
    run_round "$r" "${order[@]}"
    printf 'round %d (%s first): ropelab off %.0f on %.0f (%.3fx) | pytorch off %.0f on %.0f (%.3fx) | ropelab/pytorch off %.2fx on %.2fx\n' \
      "$r" "${order[0]}" "${tps[ropelab_off]}" "${tps[ropelab_on]}" "$(ratio "${tps[ropelab_on]}" "${tps[ropelab_off]}")" \
      "${tps[pytorch_off]}" "${tps[pytorch_on]}" "$(ratio "${tps[pytorch_on]}" "${tps[pytorch_off]}")" \
      "$(ratio "${tps[ropelab_off]}" "${tps[pytorch_off]}")" "$(ratio "${tps[ropelab_on]}" "${tps[pytorch_on]}")"
  done
} 2>&1 | tee "$log"
echo "raw log: $log"
