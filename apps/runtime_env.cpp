// LibTorch's CPU stack reads three settings when it is loaded, before main() runs, and
// the defaults cost a lot on this kind of machine (measured with `ropelab bench train`):
//  * OpenBLAS picks its kernels from CPUID. On CPUs newer than its tables it falls back
//    to generic code: Debian's OpenBLAS 0.3.21 reports an AVX-512 Xeon as "Prescott" and
//    multiplies 1024x1024 matrices at 77 GFLOP/s instead of ~350 (SkylakeX kernels).
//  * OpenMP threads spin after each parallel region and starve OpenBLAS's own threads
//    (OMP_WAIT_POLICY=PASSIVE: ~1.2x on a training step).
//  * glibc hands large freed blocks back to the kernel, so each training step page-faults
//    its activations in again (raised mmap/trim thresholds: ~1.15x).
// Only variables the user left unset are set, and the process re-executes itself once.
#include "runtime_env.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace ropelab::apps {

namespace {

/// The OpenBLAS core type this CPU should use when OpenBLAS picked a pre-AVX2 one, else "".
std::string openblas_correction() {
  using CoreName = char* (*)();
  auto corename = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  if (!corename) return "";  // not OpenBLAS
  const std::string chosen = corename();
  static const char* kPreAvx2[] = {"prescott", "core2",      "penryn",    "dunnington", "nehalem",     "atom",
                                   "katmai",   "coppermine", "northwood", "banias",     "sandybridge", "unknown"};
  bool outdated = false;
  for (const char* name : kPreAvx2) outdated |= strcasecmp(chosen.c_str(), name) == 0;
  if (!outdated) return "";
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return "";
}

bool set_if_unset(const char* name, const std::string& value) {
  if (value.empty() || std::getenv(name)) return false;
  setenv(name, value.c_str(), 1);
  return true;
}

}  // namespace

void ensure_runtime_env(char** argv) {
  if (std::getenv("ROPELAB_NO_REEXEC") || std::getenv("ROPELAB_REEXECED")) return;
  bool changed = false;
  changed |= set_if_unset("OPENBLAS_CORETYPE", openblas_correction());
  changed |= set_if_unset("OMP_WAIT_POLICY", "PASSIVE");
  changed |=
      set_if_unset("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=4294967295:glibc.malloc.trim_threshold=4294967295");
  if (!changed) return;
  setenv("ROPELAB_REEXECED", "1", 1);
  execv("/proc/self/exe", argv);  // returns only on failure: carry on as we are
}

}  // namespace ropelab::apps
