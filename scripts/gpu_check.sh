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
#   3. runs, with --device cuda, every benchmark of the GPU targets beside its PyTorch peer
#      (scripts/gpu_peers.py, the same work from Python on the same GPU): bench rotary at
#      [2048, 16, 12, 64] and [4096, 8, 32, 128] in fp32, bf16 and fp16; attention without a
#      bias in bf16 (`auto`, which takes PyTorch's scaled_dot_product_attention from LibTorch
#      2.0) against F.scaled_dot_product_attention; attention with ALiBi, Kerple, T5 and FIRE
#      (and a window with sinks) in bf16, forward and backward, against FlexAttention compiled
#      with the same score modification; 131072 tokens of forward (peak memory); bench train of
#      the toy model in fp32, fp16 and bf16, and of a GPU-sized model (d_model 512, 6 + 6 layers,
#      8 heads, 16384 target tokens a batch) in fp32 and bf16 against its PyTorch twin;
#   4. prints one table (also written to build-gpu/gpu_check.md), with a row per comparison
#      (scripts/gpu_compare.py: ropelab's time over the peer's), writes the table, the GPU,
#      driver, torch and CUDA versions, every JSON line and the device tests' log to
#      bench/results/gpu_check-YYYYMMDD-HHMMSS.log (GPU_CHECK_RESULTS names another folder, such
#      as the device tool's $OUT), and exits non-zero if a step failed. Each step is stopped
#      after GPU_CHECK_STEP_LIMIT seconds (120); GPU_CHECK_PYTHON names the peers' Python.
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
# Every bench's JSON lines (with "device") and the PyTorch peers' (scripts/gpu_peers.py) go
# to $build/gpu_check.*.log; scripts/gpu_compare.py reads them all into the comparison rows.
bench() { # name[:label], figures-from-json (python expression over rows), arguments...
  local name=${1%%:*} label=${1//:/ } summary=$2
  shift 2
  local log=$build/gpu_check.bench_${label// /_}.log
  if timeout "$step_limit" "$cli" bench "$name" --device "$device" --json "$@" >"$log" 2>&1; then
    row "bench $label" ok "$(python3 -c "import json,sys; rows=[json.loads(l) for l in open(sys.argv[1]) if l.startswith('{')]; print($summary)" "$log")"
  else
    row "bench $label" FAILED "$(tail -1 "$log")"
  fi
}
peer() { # label, gpu_peers.py arguments...: PyTorch on the same device, the same work
  local label=$1
  shift
  local log=$build/gpu_check.peer_${label// /_}.log
  if timeout "$step_limit" "$peer_python" scripts/gpu_peers.py "$@" --device "$device" >"$log" 2>&1; then
    row "peer $label" ok "$(grep -c '^{' "$log") rows ($(grep -c '"skipped"' "$log") skipped)"
  else
    row "peer $label" FAILED "$(tail -1 "$log")"
  fi
}
step_limit=${GPU_CHECK_STEP_LIMIT:-120}
peer_python=${GPU_CHECK_PYTHON:-python3}  # the torch of the build (scripts/gpu_env.sh); a dry run may name another
# the model of target 4: d_model 512, 6 + 6 layers, 8 heads, 64 x 256 = 16384 target tokens a batch
gpu_model=(--set model.d_model=512 --set model.heads=8 --set model.encoder_layers=6 --set model.decoder_layers=6
  --set model.d_ff=2048 --batch 64 --length 256)
peer_model=(--d-model 512 --heads 8 --layers 6 --ffn 2048 --batch 64 --length 256)
if [ "$device" = cpu ]; then  # the dry run: every step once, at sizes a CPU finishes in seconds
  rotary_shapes=(64,2,4,32) rotary_dtypes=(float bfloat16) attention_seq=(256 512) bias_seq=(256) long_seq=4096
  chunked_seq=(512)
  gpu_model=(--set model.d_model=64 --set model.heads=2 --set model.encoder_layers=1 --set model.decoder_layers=1
    --set model.d_ff=128 --batch 4 --length 16)
  peer_model=(--d-model 64 --heads 2 --layers 1 --ffn 128 --batch 4 --length 16)
else
  rotary_shapes=(2048,16,12,64 4096,8,32,128) rotary_dtypes=(float bfloat16 float16)
  attention_seq=(1024 4096 16384) bias_seq=(4096 16384) long_seq=131072 chunked_seq=(4096 16384)
fi
if [ -x "$cli" ]; then
  # 1. fused rotary against the additive baseline and TorchScript, per shape and dtype
  for shape in "${rotary_shapes[@]}"; do
    for dtype in "${rotary_dtypes[@]}"; do
      bench "rotary:$shape:$dtype" "', '.join(f\"{r['method']} {r['median_ms']:.3f} ms\" for r in rows)" --repeats 20 \
        --shape "$shape" --dtype "$dtype"
    done
  done
  bench attention "'; '.join(f\"T={r['T']} softmax {r['softmax_ms']:.2f} ms {r['softmax_peak_mib']:.0f} MiB, performer {r['performer_ms']:.2f} ms {r['performer_peak_mib']:.0f} MiB\" for r in rows)" --seq 1024 4096 --mode causal
  # 2. no bias, bf16: `auto` (PyTorch's scaled_dot_product_attention from LibTorch 2.0) against
  #    the chunked form, and the same call from Python
  bench attention:plain:bf16 "'; '.join(f\"T={r['T']} auto {r['softmax_ms']:.2f} ms, chunked {r['chunked_ms']:.2f} ms\" for r in rows)" \
    --compare softmax,chunked --dtype bfloat16 --mode causal --seq "${attention_seq[@]}"
  peer "sdpa bf16" attention --peers sdpa --dtype bfloat16 --seq "${attention_seq[@]}"
  # 3. biases, bf16, forward and backward with the learned biases' gradients, against
  #    FlexAttention (compiled) with the same score modification; a window with sinks; and
  #    131072 tokens of forward (its peak memory); the peers first here, after ropelab above
  peer "flex bf16" attention --peers flex --bias alibi,kerple,t5,fire --dtype bfloat16 --seq "${bias_seq[@]}"
  for bias in alibi kerple t5 fire; do
    bench "attention:$bias:bf16" "'; '.join(f\"T={r['T']} chunked {r['chunked_ms']:.2f} ms {r['chunked_peak_mib']:.0f} MiB, materialized {r['materialized_ms']:.2f} ms\" for r in rows)" \
      --compare chunked,materialized --bias "$bias" --dtype bfloat16 --mode causal --seq "${bias_seq[@]}"
  done
  bench "attention:alibi:window:sinks" "'; '.join(f\"T={r['T']} chunked {r['chunked_ms']:.2f} ms {r['chunked_peak_mib']:.0f} MiB\" for r in rows)" \
    --compare chunked,materialized --bias alibi --window 1024 --sinks 4 --dtype bfloat16 --mode causal --seq "${bias_seq[@]}"
  peer "flex window sinks" attention --peers flex --bias alibi --window 1024 --sinks 4 --window-positions sequence \
    --dtype bfloat16 --seq "${bias_seq[@]}"
  bench "attention:long" "'; '.join(f\"T={r['T']} forward {r['chunked_ms']:.0f} ms, peak {r['chunked_peak_mib']:.0f} MiB\" for r in rows)" \
    --compare chunked,streaming --bias alibi --dtype bfloat16 --mode causal --forward-only --repeats 1 --seq "$long_seq"
  bench attention:chunked "'; '.join(f\"T={r['T']} chunked {r['chunked_ms']:.2f} ms {r['chunked_peak_mib']:.0f} MiB, materialized {r['materialized_ms']:.2f} ms {r['materialized_peak_mib']:.0f} MiB\" for r in rows)" --compare chunked,materialized --bias alibi --seq "${chunked_seq[@]}" --mode causal
  # 4. training updates: the toy model in each precision, and the GPU-sized model in fp32 and
  #    bf16 against its PyTorch peer (eager, scaled_dot_product_attention)
  bench train "', '.join(f\"{r['target_tokens_per_s']:.0f} target tok/s, {r['parameters']} parameters\" for r in rows)" --steps 20 --warmup 5
  # fp16 with its loss scale: the updates skipped while the scale settles are not timed
  [ "$device" = cpu ] ||
    bench train:fp16 "', '.join(f\"{r['target_tokens_per_s']:.0f} target tok/s, loss scale {'settled' if r['loss_scale_settled'] else 'NOT settled'} after {r['settling_updates']} overflows, {r['skipped_updates']} updates skipped\" for r in rows)" --steps 20 --warmup 5 --set train.precision=fp16
  bench train:bf16 "', '.join(f\"{r['target_tokens_per_s']:.0f} target tok/s\" for r in rows)" --steps 20 --warmup 5 --set train.precision=bf16
  # ropelab then the peer in fp32, the peer then ropelab in bf16: the order alternates
  train_ours() {
    bench "train:d512:$1" "', '.join(f\"{r['target_tokens_per_s']:.0f} target tok/s, {r['parameters']} parameters, {r['dropout_sites']} dropout sites\" for r in rows)" \
      --steps 10 --warmup 3 --set train.precision="$1" "${gpu_model[@]}"
  }
  train_peer() {
    peer "train d512 $1" train --dtype "$([ "$1" = bf16 ] && echo bfloat16 || echo float32)" --steps 10 --warmup 3 \
      "${peer_model[@]}"
  }
  train_ours fp32
  train_peer fp32
  train_peer bf16
  train_ours bf16
fi

# --- the table, and the log in bench/results -------------------------------------------------
if ls "$build"/gpu_check.bench_*.log >/dev/null 2>&1; then
  while IFS= read -r line; do rows+=("$line"); done < <(python3 scripts/gpu_compare.py "$build"/gpu_check.*.log)
fi
results=${GPU_CHECK_RESULTS:-bench/results}
mkdir -p "$results"
logfile=$results/gpu_check-$(date -u +%Y%m%d-%H%M%S).log
{
  echo "ropelab gpu_check on $(hostname), $(date -u +%Y-%m-%dT%H:%MZ), device $device"
  echo "tree: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with changes)')"
  echo "host CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores"
  [ "$device" = cpu ] || echo "GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)"
  python3 -c "import torch; print(f'torch {torch.__version__}, CUDA {torch.version.cuda}')" 2>/dev/null
  echo
  echo "| step | result | figures |"
  echo "| --- | --- | --- |"
  printf '%s\n' "${rows[@]}"
} >"$build/gpu_check.md"
{
  cat "$build/gpu_check.md"
  echo
  echo "## every JSON line (ropelab's benches and the PyTorch peers)"
  for log in "$build"/gpu_check.bench_*.log "$build"/gpu_check.peer_*.log; do
    [ -f "$log" ] && grep -h '^{' "$log"
  done
  echo
  echo "## the device tests"
  cat "$build/gpu_check.tests.log" 2>/dev/null
} >"$logfile"
cat "$build/gpu_check.md"
say "log: $logfile"
exit $failed
