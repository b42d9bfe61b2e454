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

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install_deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install_deps: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
