// The AVX2+FMA build of the streaming-attention tile loops (streaming_attention_cpu.inc),
// compiled with -mavx2 -mfma -ffast-math (CMakeLists.txt; ops/cpu_build.h): GCC vectorises
// exp through glibc's libmvec. Run only where cpu_has_avx2_fma().
#define ROPELAB_CPU_BUILD cpu_avx2
#include "streaming_attention_cpu.inc"
