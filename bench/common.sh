# Sourced by the bench scripts that compare variants, from the repository root, with the
# script's arguments: ROUNDS (3) and STEPS (20), the build (ROPELAB=PATH, default
# build/ropelab), one fixed runtime environment for every variant (ropelab's four settings,
# bench/README.md "Runtime environment", with a fixed OpenBLAS core type: SkylakeX on a CPU
# with AVX-512 BW, Haswell otherwise), the line naming the CPU and the equal-work check.
env_fixed=(ROPELAB_NO_REEXEC=1 OPENBLAS_CORETYPE=SkylakeX GOMP_SPINCOUNT=3000 OPENBLAS_THREAD_TIMEOUT=4
  GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4294967295:glibc.malloc.trim_threshold=4294967295)
grep -q avx512bw /proc/cpuinfo || env_fixed[1]=OPENBLAS_CORETYPE=Haswell
cpu_line() {
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores," \
    "avx512f: $(grep -q ' avx512f ' /proc/cpuinfo && echo yes || echo no)," \
    "avx512_bf16: $(grep -q ' avx512_bf16 ' /proc/cpuinfo && echo yes || echo no)"
}
# The last line of stdin as JSON, field $1.
field() { python3 -c "import json,sys; print(json.loads(sys.stdin.read().splitlines()[-1])['$1'])"; }
# Equal work before any timing: one untimed step of ropelab's `bench train` and of
# pytorch_train.py in the fixed environment, printed; exits unless parameters, dropout
# applications and the OpenBLAS core agree and PyTorch drops no attention weights.
check_equal_work() {
  local a b f
  a=$(env "${env_fixed[@]}" "$ropelab" bench train --threads 2 --steps 1 --warmup 0 --gemm-repeats 0 --json)
  b=$(env "${env_fixed[@]}" /usr/bin/python3 bench/pytorch_train.py --threads 2 --steps 1 --warmup 0 --json)
  echo "ropelab $a"
  echo "pytorch $b"
  for f in parameters dropout_sites blas_core; do
    [ "$(field $f <<<"$a")" = "$(field $f <<<"$b")" ] || { echo "the two models differ in $f: not equal work"; exit 1; }
  done
  [ "$(field attention_weight_dropout <<<"$b")" = 0 ] || { echo "pytorch drops attention weights: not equal work"; exit 1; }
}
rounds=${1:-3}
steps=${2:-20}
ropelab=${ROPELAB:-build/ropelab}
# bench/results/NAME-TIMESTAMP.log
log_for() { echo "bench/results/$1-$(date -u +%Y%m%d-%H%M%S).log"; }
# One round: the variants named after the round number, in that order, each through the
# caller's run(); prints each JSON line and keeps its tokens/s in tps[variant] (the caller
# declares tps, an associative array).
run_round() {
  local r=$1 v line
  shift
  for v in "$@"; do
    line=$(run "$v" | tail -1)
    echo "round $r $v $line"
    tps[$v]=$(field target_tokens_per_s <<<"$line")
  done
}
ratio() { echo "$1 / $2" | bc -l; }
