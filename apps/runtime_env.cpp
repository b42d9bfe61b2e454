// LibTorch's CPU stack reads its settings when it is loaded, before main() runs, and
// the defaults cost a lot on this kind of machine (measured with `ropelab bench train`):
//  * OpenBLAS picks its kernels from CPUID. On CPUs newer than its tables it falls back
//    to generic code: Debian's OpenBLAS 0.3.21 reports an AVX-512 Xeon as "Prescott" and
//    multiplies 1024x1024 matrices at 77 GFLOP/s instead of ~350 (SkylakeX kernels). Where
//    it runs its AVX2 kernels ("Haswell", "Zen") on an AVX-512 CPU, a training step on an
//    AMD EPYC runs at 0.62-0.67x the speed of its AVX-512 ones (bench/openblas_coretypes.sh,
//    with the core type forced: on that CPU OpenBLAS picks "Cooperlake" by itself).
//  * libgomp's threads spin for ~300000 iterations after each parallel region and starve
//    OpenBLAS's own threads (OMP_WAIT_POLICY=PASSIVE, no spinning: ~1.2x on a training
//    step). OpenBLAS's threads in turn call sched_yield for ~2^28 cycles after each
//    product before they sleep, and take the second core from the OpenMP thread running
//    the fused kernels between products. Training sets both short instead
//    (GOMP_SPINCOUNT=3000, about 30 us, unless OMP_WAIT_POLICY is set, and
//    OPENBLAS_THREAD_TIMEOUT=4, the shortest): against PASSIVE alone 1.07-1.09x on an fp32
//    step from the OpenBLAS timeout, then 1.02-1.04x in fp32 and 1.16-1.18x in bf16 from
//    the spinning, as oneDNN runs each bf16 product as one parallel region
//    (bench/compare_env.sh). Decoding, with its many small products, is fastest with
//    PASSIVE and OpenBLAS's default (bench/results/translate_env-*.log).
//  * glibc hands large freed blocks back to the kernel, so each training step page-faults
//    its activations in again (raised mmap/trim thresholds: ~1.15x).
// Only variables the user left unset are set, and the process re-executes itself once.
#include "runtime_env.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>

#include "ropelab/util/machine.h"

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

}  // namespace

// ROPELAB_REEXECED records what the settings are for and which of the per-kind ones
// ropelab set itself ("train:GOMP_SPINCOUNT,OPENBLAS_THREAD_TIMEOUT"). A child of the other
// kind (ablate's evaluations, which decode) drops those and re-executes with its own; what
// the user set is never touched, and the core type and malloc settings stay.
void ensure_runtime_env(char** argv) {
  if (std::getenv("ROPELAB_NO_REEXEC")) return;
  const std::string kind = trains(argv) ? "train" : "other";
  bool changed = false;
  if (const char* done = std::getenv("ROPELAB_REEXECED")) {
    const std::string record = done;
    const auto colon = record.find(':');
    if (record.substr(0, colon) == kind) return;
    std::stringstream names(colon == std::string::npos ? "" : record.substr(colon + 1));
    for (std::string name; std::getline(names, name, ',');)
      if (!name.empty()) changed |= unsetenv(name.c_str()) == 0;
  }
  std::string per_kind;
  auto set_if_unset = [&](const char* name, const std::string& value, bool kind_specific) {
    if (value.empty() || std::getenv(name)) return;
    setenv(name, value.c_str(), 1);
    if (kind_specific) per_kind += (per_kind.empty() ? "" : ",") + std::string(name);
    changed = true;
  };
  set_if_unset("OPENBLAS_CORETYPE", openblas_correction(), false);
  if (kind == "train") {
    if (!std::getenv("OMP_WAIT_POLICY")) set_if_unset("GOMP_SPINCOUNT", "3000", true);
    set_if_unset("OPENBLAS_THREAD_TIMEOUT", "4", true);
  } else if (!std::getenv("GOMP_SPINCOUNT")) {
    set_if_unset("OMP_WAIT_POLICY", "PASSIVE", true);
  }
  set_if_unset("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=4294967295:glibc.malloc.trim_threshold=4294967295",
               false);
  if (!changed) return;
  setenv("ROPELAB_REEXECED", (kind + ":" + per_kind).c_str(), 1);
  execv("/proc/self/exe", argv);  // returns only on failure: carry on as we are
}

}  // namespace ropelab::apps
