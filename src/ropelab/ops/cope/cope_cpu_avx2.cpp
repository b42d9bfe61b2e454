// The AVX2+FMA build of CoPE's probability loops (cope_cpu.inc), compiled with -mavx2 -mfma
// -ffast-math (CMakeLists.txt; ops/cpu_build.h): GCC vectorises expf through glibc's
// libmvec. Run only where cpu_has_avx2_fma().
#define ROPELAB_CPU_BUILD cpu_avx2
#include "cope_cpu.inc"
