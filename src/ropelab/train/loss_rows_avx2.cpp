// Compiled with -O3 -mavx2 -mfma -ffast-math (CMakeLists.txt): GCC then vectorises expf
// through glibc's libmvec. Called only when the CPU has AVX2 and FMA.
#define ROPELAB_ROWS_NS avx2
#include "loss_rows.inc"
