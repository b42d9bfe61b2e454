# Sourced by the bench scripts that compare variants, from the repository root, with the
# script's arguments: ROUNDS (3) and STEPS (20), the build (ROPELAB=PATH, default
# build/ropelab), one fixed runtime environment for every variant (ropelab's three settings,
# bench/README.md "Runtime environment", with a fixed OpenBLAS core type: SkylakeX on a CPU
# with AVX-512 BW, Haswell otherwise), and the line naming the CPU.
env_fixed=(ROPELAB_NO_REEXEC=1 OPENBLAS_CORETYPE=SkylakeX OMP_WAIT_POLICY=PASSIVE
  GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4294967295:glibc.malloc.trim_threshold=4294967295)
grep -q avx512bw /proc/cpuinfo || env_fixed[1]=OPENBLAS_CORETYPE=Haswell
cpu_line() {
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores," \
    "avx512f: $(grep -q ' avx512f ' /proc/cpuinfo && echo yes || echo no)," \
    "avx512_bf16: $(grep -q ' avx512_bf16 ' /proc/cpuinfo && echo yes || echo no)"
}
# The last line of stdin as JSON, field $1.
field() { python3 -c "import json,sys; print(json.loads(sys.stdin.read().splitlines()[-1])['$1'])"; }
rounds=${1:-3}
steps=${2:-20}
ropelab=${ROPELAB:-build/ropelab}
# bench/results/NAME-TIMESTAMP.log
log_for() { echo "bench/results/$1-$(date -u +%Y%m%d-%H%M%S).log"; }
