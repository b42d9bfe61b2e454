// LibTorch's CPU stack reads four settings when it is loaded, before main() runs, and
// the defaults cost a lot on this kind of machine (measured with `ropelab bench train`):
//  * OpenBLAS picks its kernels from CPUID. On CPUs newer than its tables it falls back
//    to generic code: Debian's OpenBLAS 0.3.21 reports an AVX-512 Xeon as "Prescott" and
//    multiplies 1024x1024 matrices at 77 GFLOP/s instead of ~350 (SkylakeX kernels). Where
//    it runs its AVX2 kernels ("Haswell", "Zen") on an AVX-512 CPU, a training step on an
//    AMD EPYC runs at 0.62-0.67x the speed of its AVX-512 ones (bench/openblas_coretypes.sh,
//    with the core type forced: on that CPU OpenBLAS picks "Cooperlake" by itself).
//  * OpenMP threads spin after each parallel region and starve OpenBLAS's own threads
//    (OMP_WAIT_POLICY=PASSIVE: ~1.2x on a training step).
//  * The other way round, OpenBLAS's threads call sched_yield for about 2^28 cycles after
//    each product before they sleep, and take the cores from the OpenMP threads running
//    the elementwise kernels between products. Training sets OPENBLAS_THREAD_TIMEOUT=4,
//    the shortest (1.07-1.09x on a training step, bench/compare_env.sh); decoding keeps
//    the default, as its many small products then wait for sleeping threads to wake
//    (beam search ~15% slower with it).
//  * glibc hands large freed blocks back to the kernel, so each training step page-faults
//    its activations in again (raised mmap/trim thresholds: ~1.15x).
// Only variables the user left unset are set, and the process re-executes itself once.
#include "runtime_env.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "ropelab/util/runtime.h"

namespace ropelab::apps {

namespace {

/// The OpenBLAS core type this CPU should use when OpenBLAS picked a slower one, else "".
std::string openblas_correction() {
  const std::string chosen = openblas_core();
  if (chosen.empty()) return "";  // not OpenBLAS
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  return openblas_core_correction(chosen, __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"), avx512);
}

/// Whether the command line trains: `train`, `ablate` or `bench train`.
bool trains(char** argv) {
  auto is = [&](int i, const char* word) { return argv[i] && std::strcmp(argv[i], word) == 0; };
  return argv[0] && (is(1, "train") || is(1, "ablate") || (is(1, "bench") && is(2, "train")));
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
  if (trains(argv)) changed |= set_if_unset("OPENBLAS_THREAD_TIMEOUT", "4");
  changed |=
      set_if_unset("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=4294967295:glibc.malloc.trim_threshold=4294967295");
  if (!changed) return;
  setenv("ROPELAB_REEXECED", "1", 1);
  execv("/proc/self/exe", argv);  // returns only on failure: carry on as we are
}

}  // namespace ropelab::apps
