#!/usr/bin/env bash
# Training speed of `ropelab bench train` under each OpenBLAS core type (OPENBLAS_CORETYPE),
# the order of the core types rotating between rounds; "default" is OpenBLAS's own choice
# from CPUID (OPENBLAS_CORETYPE removed from the environment), with ropelab's automatic
# correction turned off (ROPELAB_NO_REEXEC=1 and the other runtime settings for training given
# explicitly, so only the core type differs):
#   bash bench/openblas_coretypes.sh [ROUNDS=3] [STEPS=20]     (ROPELAB=PATH: another build)
# Prints the CPU model and OpenBLAS's default core first; the raw output goes to
# bench/results/openblas_coretypes-TIMESTAMP.log as well.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh "$@"
types=(default SkylakeX Cooperlake Zen Haswell)
log=$(log_for openblas_coretypes)
base=(ROPELAB_NO_REEXEC=1 GOMP_SPINCOUNT=3000 OPENBLAS_THREAD_TIMEOUT=4
  GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4294967295:glibc.malloc.trim_threshold=4294967295)
{
  cpu_line
  echo "ropelab: $ropelab ($(git rev-parse --short HEAD)); rounds $rounds, $steps timed steps, 2 threads"
  for r in $(seq "$rounds"); do
    n=${#types[@]}
    for i in $(seq 0 $((n - 1))); do
      t=${types[$(((i + r - 1) % n))]}
      extra=()
      [ "$t" = default ] || extra=(OPENBLAS_CORETYPE="$t")
      line=$(env -u OPENBLAS_CORETYPE "${base[@]}" ${extra[@]+"${extra[@]}"} "$ropelab" bench train --threads 2 --steps "$steps" --json | tail -1)
      echo "round $r $t $line"
    done
  done
} 2>&1 | tee "$log"
echo "raw log: $log"
