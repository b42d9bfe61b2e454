#include "ropelab/util/runtime.h"

#include <ATen/Version.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <dlfcn.h>
#include <strings.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <thread>

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

int64_t set_threads(int64_t threads) {
  if (threads <= 0) threads = std::max<int64_t>(1, std::thread::hardware_concurrency());
  torch::set_num_threads(static_cast<int>(threads));
  return torch::get_num_threads();
}

MachineInfo machine_info() {
  MachineInfo info;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      const auto start = colon == std::string::npos ? std::string::npos : line.find_first_not_of(" \t", colon + 1);
      info.cpu = start == std::string::npos ? "" : line.substr(start);
      break;
    }
  if (info.cpu.empty()) info.cpu = "unknown CPU";
  info.cpu += ", " + std::to_string(std::thread::hardware_concurrency()) + " cores";  // the machine's
  // ATen exports its run-time choice only in its build summary ("CPU capability usage: AVX2")
  const std::string config = at::show_config(), key = "CPU capability usage: ";
  const auto at = config.find(key);
  info.aten_isa =
      at == std::string::npos ? "unknown" : config.substr(at + key.size(), config.find('\n', at) - at - key.size());
  info.blas_core = openblas_core();
  for (const char* name : {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OPENBLAS_THREAD_TIMEOUT"})
    if (const char* value = std::getenv(name))
      info.thread_env += (info.thread_env.empty() ? "" : " ") + std::string(name) + "=" + value;
  return info;
}

std::string openblas_core() {
  using CoreName = char* (*)();
  const auto name = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  return name ? name() : "";
}

std::string openblas_core_correction(const std::string& chosen, bool avx2_fma, bool avx512) {
  static const char* kPreAvx2[] = {"prescott", "core2",      "penryn",    "dunnington", "nehalem",     "atom",
                                   "katmai",   "coppermine", "northwood", "banias",     "sandybridge", "unknown"};
  static const char* kAvx512[] = {"skylakex", "cooperlake", "sapphirerapids"};
  auto one_of = [&](const auto& names) {
    for (const char* name : names)
      if (strcasecmp(chosen.c_str(), name) == 0) return true;
    return false;
  };
  if (avx512) return one_of(kAvx512) ? "" : "SkylakeX";
  if (avx2_fma && one_of(kPreAvx2)) return "Haswell";
  return "";
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string format_duration(double seconds) {
  const auto s = static_cast<int64_t>(seconds + 0.5);
  char buffer[32];
  if (s >= 3600)
    std::snprintf(buffer, sizeof buffer, "%ldh%02ldm", static_cast<long>(s / 3600), static_cast<long>(s % 3600 / 60));
  else if (s >= 60)
    std::snprintf(buffer, sizeof buffer, "%ldm%02lds", static_cast<long>(s / 60), static_cast<long>(s % 60));
  else
    std::snprintf(buffer, sizeof buffer, "%lds", static_cast<long>(s));
  return buffer;
}

}  // namespace ropelab
