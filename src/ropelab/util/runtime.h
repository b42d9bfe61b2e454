#pragma once
/// Device and thread set-up shared by every app.

#include <torch/torch.h>

#include <string>

namespace ropelab {

/// Parses cpu | cuda | cuda:N; throws std::runtime_error when the device is unknown or
/// CUDA is asked for but unavailable.
torch::Device parse_device(const std::string& name);

/// The device a process computes on, from the one configured: `cuda` without an index becomes
/// cuda:LOCAL_RANK (cuda:0 for a single process), so that every rank of a data-parallel run
/// on one machine has its own GPU. Throws std::runtime_error when a rank has no GPU of its own
/// (`local_rank` >= `cuda_devices`) or when several local ranks are given one indexed GPU.
/// `cuda_devices` is torch::cuda::device_count() outside tests.
torch::Device device_for_rank(const torch::Device& configured, int64_t local_rank, int64_t local_world_size,
                              int64_t cuda_devices);

/// Makes `device` the current device of its kind (cudaSetDevice for CUDA; nothing for the
/// CPU), so that what names no tensor (NCCL's communicators, the current stream, the
/// caching allocator's default) lands on it and not on cuda:0.
void make_current(const torch::Device& device);

/// parse_device, device_for_rank and make_current: the device of a process launched with
/// `local_rank` of `local_world_size` ranks on this machine (0 of 1 for a single process).
torch::Device use_device(const std::string& name, int64_t local_rank = 0, int64_t local_world_size = 1);

/// Sets LibTorch's intra-op threads (0 = all cores); returns the number in use.
int64_t set_threads(int64_t threads);

/// What a benchmark names about the machine it ran on.
struct MachineInfo {
  std::string cpu;         // /proc/cpuinfo's model name and the machine's logical cores
  std::string aten_isa;    // ATen's vectorised kernels chosen at run time: DEFAULT, AVX2, AVX512
  std::string blas_core;   // OpenBLAS's core type in this process; "" when the BLAS is another
  std::string thread_env;  // how long idle threads spin: OMP_WAIT_POLICY, GOMP_SPINCOUNT and
                           // OPENBLAS_THREAD_TIMEOUT as set in this process ("" when none is)
};
MachineInfo machine_info();

/// OpenBLAS's core type in this process (openblas_get_corename); "" when the BLAS is another.
std::string openblas_core();

/// The OpenBLAS core type (OPENBLAS_CORETYPE) worth asking for when OpenBLAS chose `chosen`
/// (openblas_get_corename) on a CPU with these features, or "" to keep its choice:
/// SkylakeX on an AVX-512 CPU (F, BW, VL, DQ) unless it chose an AVX-512 core; Haswell on an
/// AVX2+FMA CPU when it chose a pre-AVX2 core. Case-insensitive.
std::string openblas_core_correction(const std::string& chosen, bool avx2_fma, bool avx512);

/// Wall-clock seconds since an arbitrary epoch (steady clock).
double now_seconds();

/// "1h02m", "3m07s", "12s"
std::string format_duration(double seconds);

}  // namespace ropelab
