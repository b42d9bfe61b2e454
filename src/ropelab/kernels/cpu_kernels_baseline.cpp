// The baseline build of kernels/cpu_kernels.inc, plus the CPU check.
#define ROPELAB_ROWS_NS baseline
#include "cpu_kernels.inc"

namespace ropelab {
bool cpu_has_avx2_fma() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return has;
}
}  // namespace ropelab
