#!/usr/bin/env bash
# The first check on a machine with an NVIDIA GPU: one command, one table.
#
#   scripts/gpu_check.sh            on the GPU machine, from the repository root
#   scripts/gpu_check.sh --pack     on a Debian bookworm machine with apt, beforehand
#
# On the GPU machine it needs nvcc, CMake, Ninja, g++ and a Python whose torch has CUDA
# (`python3 -c "import torch; print(torch.utils.cmake_prefix_path)"`). It
#   1. builds ropelab against that LibTorch in build-gpu (Gloo off: PyTorch's wheels ship no
#      Gloo headers; NCCL from the wheel's nvidia-nccl package when present);
#   2. runs the device tests (tests/devices, Device.*, the CUDA tests of the other suites);
#   3. runs bench rotary, bench attention (softmax against Performer, and the chunked streaming
#      attention against the whole score matrix) and bench train (fp32, and fp16 with its loss
#      scale) with --device cuda;
#   4. prints one table (also written to build-gpu/gpu_check.md) and exits non-zero if a
#      step failed.
# CLI11, yaml-cpp, nlohmann-json, GoogleTest and SentencePiece come from the system when
# CMake finds them; otherwise from the Debian packages that `--pack` downloads into
# .gpu-deps/ (carry that folder to a machine without internet). They are unpacked into / with
# `cp --no-clobber`: nothing already there is replaced.
#
# GPU_CHECK_DEVICE=cpu runs the same steps on the CPU with the Torch CMake finds (a dry run
# of this script where there is no GPU); GPU_CHECK_BUILD names the build directory.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

die() {
  echo "gpu_check: $*" >&2
  exit 1
}
say() {
  echo "gpu_check: $*"
}

[ $# -eq 0 ] || [ "$1" = --pack ] || die "unknown argument '$1' (usage: scripts/gpu_check.sh [--pack])"
device=${GPU_CHECK_DEVICE:-cuda}
# shellcheck source=scripts/gpu_env.sh
source scripts/gpu_env.sh
if [ "${1:-}" = --pack ]; then
  mkdir -p "$gpu_deps_dir"
  (cd "$gpu_deps_dir" && apt-get download "${gpu_deb_packages[@]}") || die "apt-get download failed"
  echo "gpu_check: $(ls "$gpu_deps_dir"/*.deb | wc -l) packages in $gpu_deps_dir ($(du -sh "$gpu_deps_dir" | cut -f1)); carry it"
  exit 0
fi
build=${GPU_CHECK_BUILD:-build-gpu}
rows=()
failed=0
row() { # step, result, figures
  rows+=("| $1 | $2 | $3 |")
  [ "$2" = FAILED ] && failed=1
  return 0
}

# --- the LibTorch and the GPU, and .gpu-deps (scripts/gpu_env.sh) ----------------------------
gpu_env_setup
[ -n "$gpu_summary" ] && row "GPU" ok "$gpu_summary"

# --- build -----------------------------------------------------------------------------------
mkdir -p "$build"
start=$SECONDS
if cmake -S . -B "$build" -G Ninja "${cmake_flags[@]}" >"$build/gpu_check.configure.log" 2>&1 &&
  cmake --build "$build" -j "$(nproc)" >"$build/gpu_check.build.log" 2>&1; then
  row build ok "$(grep -o 'CUDA kernels [A-Z]*' "$build/gpu_check.configure.log" | head -1), $((SECONDS - start)) s"
else
  tail -30 "$build/gpu_check.configure.log" "$build/gpu_check.build.log" 2>/dev/null
  row build FAILED "see $build/gpu_check.configure.log and $build/gpu_check.build.log"
fi
cli=$build/ropelab

# --- tests -----------------------------------------------------------------------------------
if [ -x "$build/ropelab_tests" ]; then
  filter='Devices/*:Cuda.*:Device.*:CpuKernelDispatch.Run*:Rotary.*:Transformer.CudaMatchesCpu:Cli.TwoGpus*'
  log=$build/gpu_check.tests.log
  ROPELAB_CLI=$PWD/$cli "$build/ropelab_tests" --gtest_filter="$filter" >"$log" 2>&1
  code=$?
  passed=$(grep -c '^\[       OK \]' "$log")
  skipped=$(grep -c '^\[  SKIPPED \] .*(' "$log")
  failures=$(grep '^\[  FAILED  \] .*(' "$log" | sed 's/^\[  FAILED  \] //; s/ (.*//' | tr '\n' ' ')
  [ $code -eq 0 ] && result=ok || result=FAILED
  row "device tests" "$result" "$passed passed, $skipped skipped${failures:+, failed: $failures}"
else
  row "device tests" FAILED "no test binary"
fi

# --- benchmarks ------------------------------------------------------------------------------
bench() { # name[:label], figures-from-json (python expression over rows), arguments...
  local name=${1%%:*} label=${1//:/ } summary=$2
  shift 2
  local log=$build/gpu_check.bench_${label// /_}.log
  if "$cli" bench "$name" --device "$device" --json "$@" >"$log" 2>&1; then
    row "bench $label" ok "$(python3 -c "import json,sys; rows=[json.loads(l) for l in open(sys.argv[1]) if l.startswith('{')]; print($summary)" "$log")"
  else
    row "bench $label" FAILED "$(tail -1 "$log")"
  fi
}
if [ -x "$cli" ]; then
  bench rotary "', '.join(f\"{r['method']} {r['median_ms']:.3f} ms\" for r in rows)" --repeats 20
  bench attention "'; '.join(f\"T={r['T']} softmax {r['softmax_ms']:.2f} ms {r['softmax_peak_mib']:.0f} MiB, performer {r['performer_ms']:.2f} ms {r['performer_peak_mib']:.0f} MiB\" for r in rows)" --seq 1024 4096 --mode causal
  # streaming attention in chunks of device ops against the whole score matrix (ATen ops)
  bench attention:chunked "'; '.join(f\"T={r['T']} chunked {r['chunked_ms']:.2f} ms {r['chunked_peak_mib']:.0f} MiB, materialized {r['materialized_ms']:.2f} ms {r['materialized_peak_mib']:.0f} MiB\" for r in rows)" --compare chunked,materialized --bias alibi --seq 4096 16384 --mode causal
  bench train "', '.join(f\"{r['target_tokens_per_s']:.0f} target tok/s, {r['parameters']} parameters\" for r in rows)" --steps 20 --warmup 5
  # fp16 with its loss scale: the updates skipped while the scale settles are not timed
  [ "$device" = cpu ] ||
    bench train:fp16 "', '.join(f\"{r['target_tokens_per_s']:.0f} target tok/s, loss scale {'settled' if r['loss_scale_settled'] else 'NOT settled'} after {r['settling_updates']} overflows, {r['skipped_updates']} updates skipped\" for r in rows)" --steps 20 --warmup 5 --set train.precision=fp16
fi

# --- the table -------------------------------------------------------------------------------
{
  echo "ropelab gpu_check on $(hostname), $(date -u +%Y-%m-%dT%H:%MZ), device $device"
  echo
  echo "| step | result | figures |"
  echo "| --- | --- | --- |"
  printf '%s\n' "${rows[@]}"
} | tee "$build/gpu_check.md" 2>/dev/null || true
exit $failed
