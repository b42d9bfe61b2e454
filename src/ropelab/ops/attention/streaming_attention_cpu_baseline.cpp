// The baseline build of the streaming-attention tile loops (streaming_attention_cpu.inc;
// ops/cpu_build.h).
#define ROPELAB_CPU_BUILD cpu_baseline
#include "streaming_attention_cpu.inc"
