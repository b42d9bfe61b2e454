#include "ropelab/util/machine.h"

#include <ATen/Version.h>
#include <dlfcn.h>
#include <strings.h>

#include <cstdlib>
#include <fstream>
#include <thread>

namespace ropelab {

MachineInfo machine_info() {
  MachineInfo info;
  std::ifstream cpuinfo("/proc/cpuinfo");
  info.cpu = cpu_description(cpuinfo, std::thread::hardware_concurrency());
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

std::string describe(const MachineInfo& machine) {
  return machine.cpu + "; ATen kernels " + machine.aten_isa + "; OpenBLAS core " +
         (machine.blas_core.empty() ? "(not OpenBLAS)" : machine.blas_core) + "; " +
         (machine.thread_env.empty() ? "thread settings: defaults" : machine.thread_env);
}

std::string cpu_description(std::istream& cpuinfo, unsigned cores) {
  std::string name, family, model;
  for (std::string line; std::getline(cpuinfo, line);) {  // each key's first value: the first processor's
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    auto key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);  // npos + 1 == 0: all blank
    const auto start = line.find_first_not_of(" \t", colon + 1);
    const auto value = start == std::string::npos ? "" : line.substr(start);
    auto* field = key == "model name" ? &name : key == "cpu family" ? &family : key == "model" ? &model : nullptr;
    if (field && field->empty()) *field = value;
  }
  std::string text = name.empty() ? "unknown CPU" : name;
  if (!family.empty() && !model.empty()) text += " (family " + family + ", model " + model + ")";
  return text + ", " + std::to_string(cores) + " cores";
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

}  // namespace ropelab
