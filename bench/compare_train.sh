#!/usr/bin/env bash
# ropelab's training step against the same model and step in PyTorch Python
# (bench/pytorch_train.py: torch.nn.Transformer set to ropelab's work, Debian's python3-torch
# on the same LibTorch), N rounds, the order of the variants alternating between rounds:
#   bash bench/compare_train.sh [ROUNDS=3] [STEPS=20]     (ROPELAB=PATH: another build)
# Variants: ropelab and PyTorch in one fixed environment (bench/common.sh: ropelab's runtime
# settings, bench/README.md "Runtime environment", with a fixed OpenBLAS core type), so that
# only the code differs; PyTorch in the environment this shell gives it.
# Prints the CPU and both models' parameters, dropout sites and OpenBLAS core types first
# (they must be equal), then one line per round; the raw output goes to
# bench/results/compare_train-TIMESTAMP.log as well.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh "$@"
log=$(log_for compare_train)

run() { # variant -> one JSON line
  case $1 in
    ropelab) env "${env_fixed[@]}" "$ropelab" bench train --threads 2 --steps "$steps" --gemm-repeats 0 --json ;;
    pytorch_same_env) env "${env_fixed[@]}" /usr/bin/python3 bench/pytorch_train.py --threads 2 --steps "$steps" --json ;;
    pytorch_default_env) /usr/bin/python3 bench/pytorch_train.py --threads 2 --steps "$steps" --json ;;
  esac
}

{
  cpu_line
  echo "ropelab: $ropelab ($(git rev-parse --short HEAD)); pytorch: $(/usr/bin/python3 -c 'import torch; print(torch.__version__)')"
  echo "rounds $rounds, $steps timed steps each, 2 threads; same env = ${env_fixed[*]}"
  echo "this shell's OpenBLAS settings: $(env | grep '^OPENBLAS_' | tr '\n' ' ')"
  check_equal_work
  variants=(ropelab pytorch_same_env pytorch_default_env)
  for r in $(seq "$rounds"); do
    order=("${variants[@]}")
    [ $((r % 2)) -eq 0 ] && order=(pytorch_default_env pytorch_same_env ropelab)
    declare -A tps=()
    run_round "$r" "${order[@]}"
    printf 'round %d (%s first): ropelab %.0f tok/s | pytorch same env %.0f (ropelab %.2fx) | pytorch default env %.0f (ropelab %.2fx)\n' \
      "$r" "${order[0]}" "${tps[ropelab]}" "${tps[pytorch_same_env]}" \
      "$(ratio "${tps[ropelab]}" "${tps[pytorch_same_env]}")" "${tps[pytorch_default_env]}" \
      "$(ratio "${tps[ropelab]}" "${tps[pytorch_default_env]}")"
  done
} 2>&1 | tee "$log"
echo "raw log: $log"
