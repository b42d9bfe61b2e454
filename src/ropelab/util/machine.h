#pragma once
/// What a benchmark names about the machine it runs on, and the BLAS core worth asking for.

#include <string>

namespace ropelab {

/// What a benchmark names about the machine it ran on.
struct MachineInfo {
  std::string cpu;         // /proc/cpuinfo's model name and the machine's logical cores
  std::string aten_isa;    // ATen's vectorised kernels chosen at run time: DEFAULT, AVX2, AVX512
  std::string blas_core;   // OpenBLAS's core type in this process; "" when the BLAS is another
  std::string thread_env;  // how long idle threads spin: OMP_WAIT_POLICY, GOMP_SPINCOUNT and
                           // OPENBLAS_THREAD_TIMEOUT as set in this process ("" when none is)
};
MachineInfo machine_info();

/// OpenBLAS's core type in this process (openblas_get_corename); "" when the BLAS is another.
std::string openblas_core();

/// The OpenBLAS core type (OPENBLAS_CORETYPE) worth asking for when OpenBLAS chose `chosen`
/// (openblas_get_corename) on a CPU with these features, or "" to keep its choice:
/// SkylakeX on an AVX-512 CPU (F, BW, VL, DQ) unless it chose an AVX-512 core; Haswell on an
/// AVX2+FMA CPU when it chose a pre-AVX2 core. Case-insensitive.
std::string openblas_core_correction(const std::string& chosen, bool avx2_fma, bool avx512);

}  // namespace ropelab
