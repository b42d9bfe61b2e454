// The AVX2+FMA build of the Adam CPU loop (adam_cpu.inc), compiled with -mavx2 -mfma
// -ffast-math (CMakeLists.txt; ops/cpu_build.h); run only where cpu_has_avx2_fma().
#define ROPELAB_CPU_BUILD cpu_avx2
#include "adam_cpu.inc"
