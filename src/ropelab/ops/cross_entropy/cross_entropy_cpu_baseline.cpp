// The baseline build of the cross-entropy CPU loops (cross_entropy_cpu.inc; ops/cpu_build.h).
#define ROPELAB_CPU_BUILD cpu_baseline
#include "cross_entropy_cpu.inc"
