// The baseline build of the rotary CPU loop (rotary_cpu.inc; ops/cpu_build.h).
#define ROPELAB_CPU_BUILD cpu_baseline
#include "rotary_cpu.inc"
