#pragma once
// The two CPU builds of an op's inner loops, and the rule they follow.
//
// Each op folder (ops/<op>/) keeps its CPU loop as templates in <op>_cpu.inc, compiled
// twice: <op>_cpu_baseline.cpp with the compiler's default target, and <op>_cpu_avx2.cpp
// with -mavx2 -mfma -ffast-math (-ffast-math so that GCC vectorises expf through glibc's
// libmvec; the flags are in CMakeLists.txt). Each build #defines ROPELAB_CPU_BUILD, the
// namespace it is compiled in (cpu_baseline or cpu_avx2), and exports one constant there:
// the op's kernel set, a struct of plain function pointers declared in <op>_cpu.h. The
// op's .cpp lists both in its DispatchTable (ops/dispatch.h), which runs the AVX2 build
// only where the CPU has AVX2 and FMA.
//
// The rule: these translation units include no library templates, not even std::vector,
// and no ATen: only C headers (<math.h>, <stdint.h>) and the torch-free <op>_cpu.h. An
// inline function or template instance from a header is emitted in every translation unit
// that uses it, and the linker keeps one of the copies: if it kept the one compiled with
// -mavx2, code that runs on a CPU without AVX2 would call it (SIGILL). For the same reason
// the loop templates themselves sit in an unnamed namespace (internal linkage: never merged
// across translation units), and only the kernel-set constant is exported.

#include <stdint.h>

namespace ropelab {

/// A bfloat16 in its storage form (the bits of c10::BFloat16, which has this layout):
/// the loops load it into a float and round the result back to nearest even, as c10 does.
struct BFloat16Bits {
  uint16_t bits;
};

}  // namespace ropelab
