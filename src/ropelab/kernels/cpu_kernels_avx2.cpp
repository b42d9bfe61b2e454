// The AVX2+FMA build of kernels/cpu_kernels.inc, compiled with -mavx2 -mfma -ffast-math
// (CMakeLists.txt); called only when cpu_has_avx2_fma().
#define ROPELAB_ROWS_NS avx2
#include "cpu_kernels.inc"
