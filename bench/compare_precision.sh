#!/usr/bin/env bash
# Training speed in fp32 and bf16 (train.precision), ropelab against the same model and step
# in PyTorch Python (bench/pytorch_train.py; --bf16: torch.autocast on forward and loss),
# all four in one fixed environment (compare_train.sh's), the order rotating between rounds:
#   bash bench/compare_precision.sh [ROUNDS=3] [STEPS=20]     (ROPELAB=PATH: another build)
# Prints the CPU and the equal-work check (bench/common.sh) first; the raw output goes to
# bench/results/compare_precision-TIMESTAMP.log.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh "$@"
log=$(log_for compare_precision)
run() { # variant -> one JSON line
  case $1 in
    ropelab_fp32) env "${env_fixed[@]}" "$ropelab" bench train --threads 2 --steps "$steps" --gemm-repeats 0 --json ;;
    ropelab_bf16) env "${env_fixed[@]}" "$ropelab" bench train --threads 2 --steps "$steps" --gemm-repeats 0 --set train.precision=bf16 --json ;;
    pytorch_fp32) env "${env_fixed[@]}" /usr/bin/python3 bench/pytorch_train.py --threads 2 --steps "$steps" --json ;;
    pytorch_bf16) env "${env_fixed[@]}" /usr/bin/python3 bench/pytorch_train.py --threads 2 --steps "$steps" --bf16 --json ;;
  esac
}
{
  cpu_line
  echo "ropelab: $ropelab ($(git rev-parse --short HEAD)); rounds $rounds, $steps timed steps, 2 threads; env ${env_fixed[*]}"
  check_equal_work
  variants=(ropelab_fp32 ropelab_bf16 pytorch_fp32 pytorch_bf16)
  n=${#variants[@]}
  for r in $(seq "$rounds"); do
    declare -A tps=()
    order=()
    for i in $(seq 0 $((n - 1))); do order+=("${variants[$(((i + r - 1) % n))]}"); done
    run_round "$r" "${order[@]}"
    printf 'round %d: ropelab fp32 %.0f, bf16 %.0f (%.2fx) | pytorch fp32 %.0f, bf16 %.0f (%.2fx) | ropelab/pytorch fp32 %.2fx, bf16 %.2fx\n' \
      "$r" "${tps[ropelab_fp32]}" "${tps[ropelab_bf16]}" "$(ratio "${tps[ropelab_bf16]}" "${tps[ropelab_fp32]}")" \
      "${tps[pytorch_fp32]}" "${tps[pytorch_bf16]}" "$(ratio "${tps[pytorch_bf16]}" "${tps[pytorch_fp32]}")" \
      "$(ratio "${tps[ropelab_fp32]}" "${tps[pytorch_fp32]}")" "$(ratio "${tps[ropelab_bf16]}" "${tps[pytorch_bf16]}")"
  done
} 2>&1 | tee "$log"
echo "raw log: $log"
