// The baseline build of the Adam CPU loop (adam_cpu.inc; ops/cpu_build.h).
#define ROPELAB_CPU_BUILD cpu_baseline
#include "adam_cpu.inc"
