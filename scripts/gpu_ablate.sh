#!/usr/bin/env bash
# An ablation grid on a lent GPU machine for a fixed time, its finished runs packed to bring back.
#
#   scripts/gpu_ablate.sh GRID OUT SECONDS [ablate options...]
#
# e.g. on the GPU machine, from the repository root, carrying .gpu-deps (gpu_check.sh --pack),
# data/corpora/sotu (data/prepare_sotu.sh) and the grid's records (committed):
#   GPU_ABLATE_PACK=$OUT scripts/gpu_ablate.sh experiments/ablate_length_512.yaml \
#     experiments/results/ablate_length_512 420 --jobs 6 --threads 2 --seeds 2,3
# It
#   1. builds the ropelab target against python3's torch in build-gpu, as gpu_check.sh does
#      (scripts/gpu_env.sh); a second call on the same machine finds it built;
#   2. runs `build-gpu/ropelab ablate GRID -o OUT --device cuda [ablate options]` for at most
#      SECONDS, then stops it with SIGTERM: runs in training save their checkpoint, and a later
#      call on the same machine resumes them;
#      (first, the runs finished elsewhere are unpacked from OUT/records: ablate skips them);
#   3. where GPU_ABLATE_PACK names a folder (the device tool's $OUT), packs each run that
#      finished in this call into OUT/records/NAME.tar.xz (scripts/run_records.sh pack; the
#      runs that fine-tunes start from keep their checkpoint_best.pt)
#      and those archives into GPU_ABLATE_PACK/records.tar.
# Back on the first machine, `tar -C OUT -xf records.tar` and `scripts/run_records.sh unpack
# OUT` put the runs under OUT/runs, where ablate counts them
# finished and trains only the rest: the device is not part of a run's identity, the output
# directory is (a fine-tune names its start by path), so OUT is the same on both machines.
# GPU_ABLATE_DEVICE=cpu runs the same steps on the CPU (a dry run); GPU_ABLATE_BUILD names the
# build directory.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

die() {
  echo "gpu_ablate: $*" >&2
  exit 1
}
say() {
  echo "gpu_ablate: $*"
}

[ $# -ge 3 ] || die "usage: scripts/gpu_ablate.sh GRID OUT SECONDS [ablate options...]"
grid=$1 out=$2 seconds=$3
shift 3
[ -f "$grid" ] || die "$grid: no such grid file"
[[ $seconds =~ ^[1-9][0-9]*$ ]] || die "SECONDS must be a positive whole number, not '$seconds'"
pack=${GPU_ABLATE_PACK:-}
device=${GPU_ABLATE_DEVICE:-cuda}
build=${GPU_ABLATE_BUILD:-build-gpu}

# shellcheck source=scripts/gpu_env.sh
source scripts/gpu_env.sh
gpu_env_setup
mkdir -p "$build"
start=$SECONDS
if ! { cmake -S . -B "$build" -G Ninja "${cmake_flags[@]}" >"$build/gpu_ablate.configure.log" 2>&1 &&
  cmake --build "$build" --target ropelab -j "$(nproc)" >"$build/gpu_ablate.build.log" 2>&1; }; then
  tail -30 "$build/gpu_ablate.configure.log" "$build/gpu_ablate.build.log" 2>/dev/null
  die "the build failed (see $build/gpu_ablate.configure.log and $build/gpu_ablate.build.log)"
fi
echo "gpu_ablate: ropelab built in $build in $((SECONDS - start)) s"

# The runs finished on other machines, from their archives (run_records.sh): ablate skips them.
if [ -d "$out/records" ]; then scripts/run_records.sh unpack "$out" || die "unpacking $out/records failed"; fi
mapfile -t had < <(cd "$out/records" 2>/dev/null && ls -- *.tar.xz 2>/dev/null)

start=$SECONDS
timeout "$seconds" "$build/ropelab" ablate "$grid" -o "$out" --device "$device" "$@"
code=$?
case $code in
  0) echo "gpu_ablate: ablate finished in $((SECONDS - start)) s" ;;
  124) echo "gpu_ablate: stopped after $seconds s; a later call resumes the runs left" ;;
  *) echo "gpu_ablate: ablate exited with $code after $((SECONDS - start)) s" ;;
esac

if [ -n "$pack" ]; then
  mkdir -p "$pack" || die "$pack: cannot create the folder"
  scripts/run_records.sh pack "$out" || die "packing the finished runs failed"
  new=$(comm -13 <(printf '%s\n' "${had[@]}") <(cd "$out/records" && ls -- *.tar.xz 2>/dev/null))
  if [ -n "$new" ]; then
    (cd "$out" && sed 's|^|records/|' <<<"$new" | tar -cf - -T -) >"$pack/records.tar" || die "$pack/records.tar: tar failed"
    echo "gpu_ablate: $(wc -l <<<"$new") new run archives in $pack/records.tar ($(du -h "$pack/records.tar" | cut -f1))"
  else
    echo "gpu_ablate: no run finished in this call; nothing packed"
  fi
fi
exit $code
