# shellcheck shell=bash
# Sourced from the repository root by scripts/gpu_check.sh and scripts/gpu_ablate.sh: the
# CMake flags of a build against python3's torch, and the Debian packages of .gpu-deps/
# (scripts/gpu_check.sh --pack) unpacked where the system lacks them.
# Sourcing defines gpu_deps_dir, gpu_deb_packages (what --pack downloads) and gpu_env_setup:
#   in:  device (cuda or cpu); die and say, the caller's functions that print their arguments
#        after its name (die then exits)
#   out: cmake_flags; gpu_summary ("N x NAME, torch V, CUDA V"; empty on the CPU)
# On the CPU the Torch CMake finds is used: a dry run of the calling script.

gpu_deps_dir=.gpu-deps
gpu_deb_packages=(libcli11-dev libyaml-cpp-dev libyaml-cpp0.7 nlohmann-json3-dev libgtest-dev libsentencepiece-dev
  libsentencepiece0 pkgconf pkgconf-bin libpkgconf3)

gpu_env_setup() {
  cmake_flags=(-DCMAKE_BUILD_TYPE=Release)
  gpu_summary=""
  if [ "$device" = cuda ]; then
    command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || die "nvcc not found"
    command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
    gpu_info=$(python3 - <<'PY'
import os, torch
assert torch.version.cuda, "this torch has no CUDA"
assert torch.cuda.is_available(), "torch sees no GPU"
major, minor = torch.cuda.get_device_capability(0)
import glob, sys
# nccl.h from the nvidia-nccl wheel torch depends on (its folder differs between CUDA versions)
headers = [h for base in sys.path for h in glob.glob(os.path.join(base, "nvidia", "**", "nccl.h"), recursive=True)]
nccl = os.path.dirname(headers[0]) if headers else ""
print(torch.utils.cmake_prefix_path, f"{major}.{minor}", torch.__version__, torch.version.cuda,
    torch.cuda.device_count(), torch.cuda.get_device_name(0).replace(" ", "_"), nccl or "-")
PY
    ) || die "python3's torch cannot drive a GPU here (see above)"
    read -r torch_prefix capability torch_version cuda_version gpus gpu_name nccl_include <<<"$gpu_info"
    say "torch $torch_version (CUDA $cuda_version) at $torch_prefix; $gpus x ${gpu_name//_/ } (sm $capability)"
    export TORCH_CUDA_ARCH_LIST=$capability
    cmake_flags+=(-DCMAKE_PREFIX_PATH="$torch_prefix" -DROPELAB_WITH_GLOO=OFF)
    [ "$nccl_include" != - ] && cmake_flags+=(-DNCCL_INCLUDE_DIR="$nccl_include")
    gpu_summary="$gpus x ${gpu_name//_/ }, torch $torch_version, CUDA $cuda_version"
  fi

  if ls "$gpu_deps_dir"/*.deb >/dev/null 2>&1 && ! [ -f /usr/include/yaml-cpp/yaml.h ]; then
    gpu_stage=$(mktemp -d)
    for deb in "$gpu_deps_dir"/*.deb; do dpkg -x "$deb" "$gpu_stage" || die "$deb: cannot unpack"; done
    cp -rn "$gpu_stage"/. / && ldconfig
    say "unpacked $(ls "$gpu_deps_dir"/*.deb | wc -l) packages from $gpu_deps_dir into / (nothing replaced)"
  fi
}
