#!/usr/bin/env bash
# Installs ropelab's build and runtime dependencies from Debian bookworm packages.
# Idempotent: packages already present are skipped; needs no input.
set -euo pipefail

packages=(
  libtorch-dev          # LibTorch 1.13 (CPU)
  libopenblas0-pthread  # fast libblas.so.3 for LibTorch (reference BLAS is ~30x slower)
  libsentencepiece-dev
  libcli11-dev
  libyaml-cpp-dev
  libgtest-dev
  nlohmann-json3-dev    # JSON reading and writing (metrics, eval reports)
  libgloo-dev           # Gloo headers for c10d's ProcessGroupGloo (data-parallel training)
  cmake
  ninja-build
  ccache
  pkg-config
  g++
  clang-format          # make lint (part of make test) and make format
  python3-torch         # PyTorch Python on the same LibTorch: op-loading test, speed comparisons
)

# `install_deps.sh fuzz` (make fuzz): clang, its libFuzzer/sanitizer runtimes and OpenMP
[ "${1:-}" = fuzz ] && packages+=(clang libclang-rt-14-dev libomp-14-dev)

bash "$(dirname "$0")/apt_install.sh" "${packages[@]}"
echo "install_deps: all ${#packages[@]} packages present"
