#include "ropelab/util/runtime.h"

#include <chrono>
#include <cstdio>
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

int64_t set_threads(int64_t threads) {
  if (threads <= 0) threads = std::max<int64_t>(1, std::thread::hardware_concurrency());
  torch::set_num_threads(static_cast<int>(threads));
  return torch::get_num_threads();
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
