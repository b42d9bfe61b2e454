#include "ropelab/util/device.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/cuda.h>

#include <optional>
#include <stdexcept>

namespace ropelab {

torch::Device parse_device(const std::string& name) {
  std::optional<torch::Device> device;
  try {
    device.emplace(name);
  } catch (const c10::Error&) {
    throw std::runtime_error("unknown device '" + name + "' (expected cpu, cuda or cuda:N)");
  }
  if (device->is_cuda()) {
    if (!torch::cuda::is_available())
      throw std::runtime_error("device " + name + " requested but this LibTorch build or machine has no CUDA");
    if (device->has_index() && device->index() >= static_cast<int64_t>(torch::cuda::device_count()))
      throw std::runtime_error("device " + name + " requested but only " + std::to_string(torch::cuda::device_count()) +
                               " CUDA devices exist");
  }
  return *device;
}

torch::Device device_for_rank(const torch::Device& configured, int64_t local_rank, int64_t local_world_size,
                              int64_t cuda_devices) {
  if (!configured.is_cuda()) return configured;
  if (configured.has_index()) {
    if (local_world_size > 1)
      throw std::runtime_error("device " + configured.str() + " names one GPU but " + std::to_string(local_world_size) +
                               " ranks run on this machine; use device cuda (rank i computes on cuda:LOCAL_RANK)");
    return configured;
  }
  if (local_rank >= cuda_devices)
    throw std::runtime_error("device cuda: LOCAL_RANK " + std::to_string(local_rank) +
                             " computes on cuda:" + std::to_string(local_rank) + " but this machine has " +
                             std::to_string(cuda_devices) + " CUDA device" + (cuda_devices == 1 ? "" : "s") +
                             "; start at most one rank per GPU (--nproc)");
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(local_rank));
}

void make_current(const torch::Device& device) {
  if (device.is_cpu()) return;
  TORCH_CHECK(device.has_index(), "make_current: ", device, " has no index (use device_for_rank first)");
  c10::impl::getDeviceGuardImpl(device.type())->setDevice(device);
}

torch::Device use_device(const std::string& name, int64_t local_rank, int64_t local_world_size) {
  const auto device = device_for_rank(parse_device(name), local_rank, local_world_size,
                                      static_cast<int64_t>(torch::cuda::device_count()));
  make_current(device);
  return device;
}

}  // namespace ropelab
