#!/usr/bin/env bash
# make cuda-check: does ropelab's CUDA code compile? Needs nvcc, not a GPU.
#
# With a CUDA-enabled LibTorch (ROPELAB_CUDA_TORCH=its CMake prefix, or the Python torch
# on PATH when it has CUDA): configures build-cuda against it and builds everything, linked.
# Without one (Debian's LibTorch has no CUDA): configures build-cuda-check with
# -DROPELAB_CUDA_CHECK=ON and compiles, without linking,
#   * every .cu kernel, with nvcc and the flags the real build gives it;
#   * every C++ file with a `#if ROPELAB_WITH_CUDA` branch, with that branch on, against
#     this LibTorch's c10/cuda headers and the CUDA runtime's headers.
# What this proves and what it does not: docs/cuda.md.
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
  echo "cuda_check: $*" >&2
  exit 1
}

nvcc=$(command -v nvcc || true)
[ -n "$nvcc" ] || { [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc; }
[ -n "$nvcc" ] || die "nvcc not found (on PATH or /usr/local/cuda/bin); install the CUDA toolkit"
echo "cuda_check: $("$nvcc" --version | tail -1)"

torch_prefix=${ROPELAB_CUDA_TORCH:-}
if [ -z "$torch_prefix" ] && command -v python3 >/dev/null; then
  torch_prefix=$(python3 -c 'import torch; assert torch.version.cuda; print(torch.utils.cmake_prefix_path)' \
    2>/dev/null) || torch_prefix=
fi

if [ -n "$torch_prefix" ]; then
  build=${CUDA_CHECK_BUILD:-build-cuda}
  echo "cuda_check: CUDA LibTorch at $torch_prefix: full build in $build"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$nvcc" \
    -DCMAKE_PREFIX_PATH="$torch_prefix" ${CUDA_CHECK_CMAKE_FLAGS:-}
  grep -q '^#define ROPELAB_WITH_CUDA 1' "$build/generated/ropelab/build_config.h" ||
    die "$torch_prefix: CMake found a LibTorch without CUDA"
  cmake --build "$build" -j "$(nproc)"
  echo "cuda_check: OK: ropelab built and linked against the CUDA LibTorch at $torch_prefix"
  exit 0
fi

build=${CUDA_CHECK_BUILD:-build-cuda-check}
echo "cuda_check: no CUDA LibTorch found: compile-only check in $build"
mkdir -p "$build"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DROPELAB_CUDA_CHECK=ON \
  -DCMAKE_CUDA_COMPILER="$nvcc" >"$build/cuda_check.configure.log" 2>&1 ||
  { cat "$build/cuda_check.configure.log"; die "configuring $build failed"; }
grep -q '^#define ROPELAB_WITH_CUDA 1' "$build/generated/ropelab/build_config.h" ||
  die "$build: ROPELAB_WITH_CUDA is not 1"

# The objects: each CUDA-guarded C++ file's, found in the build's own target list.
targets=$(ninja -C "$build" -t targets all | sed 's/: .*//')
objects=()
files=$(git grep -l -E 'ROPELAB_WITH_(CUDA|NCCL)' -- '*.cpp')
for file in $files; do
  object=$(grep -F "/$file.o" <<<"$targets" | head -1) || true
  [ -n "$object" ] || die "$file: no object for it in $build (is it part of a target?)"
  objects+=("$object")
done
kernels=$(git ls-files '*.cu')
[ -n "$kernels" ] || die "no .cu file found"
ninja -C "$build" -j "$(nproc)" ropelab_cuda_kernels "${objects[@]}"
echo "cuda_check: OK: compiled with nvcc:" $kernels
echo "cuda_check: OK: compiled with ROPELAB_WITH_CUDA=1 (not linked):" $files
