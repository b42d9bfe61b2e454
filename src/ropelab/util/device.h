#pragma once
/// The device a process computes on: parsed from its name, chosen per data-parallel rank,
/// made current.

#include <c10/core/Device.h>

#include <cstdint>
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

}  // namespace ropelab
