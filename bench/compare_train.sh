#!/usr/bin/env bash
# ropelab's training step against the same model in PyTorch Python (torch.nn.Transformer,
# Debian's python3-torch on the same LibTorch), measured in one run, alternating, N rounds:
#   bash bench/compare_train.sh [ROUNDS] [STEPS]      (ROPELAB=PATH: another ropelab build)
# PyTorch runs twice per round: with its default environment, and with the environment
# ropelab sets for itself at start-up (bench/README.md, "Runtime environment"), so the
# comparison isolates the code, not the OpenBLAS/OpenMP/malloc settings.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
steps=${2:-20}
env_fixed=(OPENBLAS_CORETYPE=SkylakeX OMP_WAIT_POLICY=PASSIVE
           GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4294967295:glibc.malloc.trim_threshold=4294967295)
grep -q avx512bw /proc/cpuinfo || env_fixed[0]=OPENBLAS_CORETYPE=Haswell
tps() { sed 's/.*target_tokens_per_s": *\([0-9.]*\).*/\1/'; }
for r in $(seq "$rounds"); do
  a=$("${ROPELAB:-build/ropelab}" bench train --threads 2 --steps "$steps" --json | tps)
  b=$(env "${env_fixed[@]}" /usr/bin/python3 bench/pytorch_train.py --threads 2 --steps "$steps" --json | tps)
  c=$(/usr/bin/python3 bench/pytorch_train.py --threads 2 --steps "$steps" --json | tps)
  printf 'round %d: ropelab %.0f tok/s | pytorch same env %.0f (ropelab %.2fx) | pytorch default env %.0f (ropelab %.2fx)\n' \
    "$r" "$a" "$b" "$(echo "$a / $b" | bc -l)" "$c" "$(echo "$a / $c" | bc -l)"
done
