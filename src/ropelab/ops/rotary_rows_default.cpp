#define ROPELAB_ROWS_NS baseline
#include "rotary_rows.inc"

namespace ropelab {
bool cpu_has_avx2_fma() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
}  // namespace ropelab
