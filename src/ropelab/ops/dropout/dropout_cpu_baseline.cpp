// The baseline build of the dropout CPU loop (dropout_cpu.inc; ops/cpu_build.h).
#define ROPELAB_CPU_BUILD cpu_baseline
#include "dropout_cpu.inc"
