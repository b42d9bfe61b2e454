// Compiled with -mavx2 -mfma (CMakeLists.txt); called only when cpu_has_avx2_fma().
#define ROPELAB_ROWS_NS avx2
#include "rotary_rows.inc"
