#include "ropelab/ops/dispatch.h"

#include <atomic>
#include <cstdlib>

#include "ropelab/util/enum_names.h"

namespace ropelab {

namespace {

const EnumNames<CpuKernels, 2> kLevelNames{{{CpuKernels::baseline, "baseline"}, {CpuKernels::avx2, "avx2"}}};

/// The requested level: ROPELAB_CPU_KERNELS at first use, then set_cpu_kernel_level.
std::atomic<CpuKernels>& requested() {
  static std::atomic<CpuKernels> level{[] {
    const char* value = std::getenv("ROPELAB_CPU_KERNELS");
    if (value == nullptr || *value == '\0') return CpuKernels::avx2;
    return parse_enum(std::string(value), kLevelNames, "ROPELAB_CPU_KERNELS value");
  }()};
  return level;
}

}  // namespace

std::string to_string(CpuKernels level) { return enum_name(level, kLevelNames); }
CpuKernels parse_cpu_kernels(const std::string& name) { return parse_enum(name, kLevelNames, "CPU kernel level"); }

bool cpu_has_avx2_fma() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return has;
}

CpuKernels cpu_kernel_level() {
  const bool avx2 = requested().load(std::memory_order_relaxed) == CpuKernels::avx2 && cpu_has_avx2_fma();
  return avx2 ? CpuKernels::avx2 : CpuKernels::baseline;
}

void set_cpu_kernel_level(CpuKernels level) { requested().store(level, std::memory_order_relaxed); }

CpuKernelLevelGuard::CpuKernelLevelGuard(CpuKernels level) : previous_(requested().exchange(level)) {}
CpuKernelLevelGuard::~CpuKernelLevelGuard() { requested().store(previous_); }

}  // namespace ropelab
