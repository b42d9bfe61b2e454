// The baseline build of CoPE's probability loops (cope_cpu.inc; ops/cpu_build.h).
#define ROPELAB_CPU_BUILD cpu_baseline
#include "cope_cpu.inc"
